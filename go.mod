module github.com/zenmetrics-go/zenmetrics

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/image v0.47.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)

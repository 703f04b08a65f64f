module github.com/zenmetrics-go/zenmetrics/_generate

go 1.26.0

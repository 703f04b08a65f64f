module github.com/zenmetrics-go/zenmetrics

go 1.26

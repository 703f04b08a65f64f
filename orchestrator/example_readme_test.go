package orchestrator_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// Example is the README's library snippet ("As a library"), statement for
// statement: TestREADMESnippetIsExample compares the two, so the README
// cannot show code that no longer compiles. It has no Output comment, so
// `go test` compiles it without running it (it would bench the machine).
func Example() {
	ctx := context.Background()
	ref, err := imageio.DecodeFile("ref.png")
	if err != nil {
		log.Fatal(err)
	}
	dist, err := imageio.DecodeFile("dist.png")
	if err != nil {
		log.Fatal(err)
	}
	// Probes the machine (CPU, GPUs) and loads its capability profile, if any.
	o, err := orchestrator.New(ctx, orchestrator.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer o.Close()
	// Benches once per machine and caches the profile (about 16 s);
	// afterwards a no-op until the profile is a week old.
	if _, err := o.Warm(ctx); err != nil {
		log.Fatal(err)
	}
	res := o.RunSingle(ctx, orchestrator.Task{Metric: zenmetrics.SSIMULACRA2, Ref: ref, Dist: dist})
	if res.Err != nil {
		log.Fatal(res.Err)
	}
	fmt.Println(res.Score.Value, res.Backend)
}

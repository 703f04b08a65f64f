package main

import (
	"os"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
)

func writePNG(path string, im *zenmetrics.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := imageio.EncodePNG(f, im); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

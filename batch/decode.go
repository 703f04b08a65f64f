package batch

import (
	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
)

// DecodeFunc decodes an image file. The CLI passes imageio.DecodeFile;
// errors should name the file (a *zenmetrics.InputError).
type DecodeFunc func(path string) (*zenmetrics.Image, error)

// decodeStd is the decoder used when Config.Decode is nil. It is imageio's,
// so a library caller that leaves Decode unset gets the same pixels as the
// CLI: JPEG decoded exactly as libjpeg-turbo does, PNG at every depth and
// layout, the same regular-file checks, bounded reads and pixel limit. (It
// used to be Go's image/png and image/jpeg, whose JPEG pixels differ from
// libjpeg-turbo's and so change scores.)
func decodeStd(path string) (*zenmetrics.Image, error) {
	return imageio.DecodeFile(path)
}

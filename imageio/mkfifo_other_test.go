//go:build !unix

package imageio

import "errors"

func mkfifo(p string) error { return errors.New("no FIFOs on this OS") }

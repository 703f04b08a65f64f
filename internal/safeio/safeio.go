// Package safeio opens input files (images, manifests) so that a path
// naming something other than a regular file fails at once with a clear
// error instead of hanging (a FIFO with no writer blocks open and read) or
// growing memory without bound (/dev/zero never ends), and reads them with
// a size limit checked before the read.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/zenmetrics-go/zenmetrics"
)

// ErrNotRegular is wrapped (beside zenmetrics.ErrBadInput) by the error
// for a path that is a directory, device, FIFO, socket or other special
// file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped (beside zenmetrics.ErrBadInput) when a file is
// larger than the limit given for it.
var ErrTooLarge = errors.New("file too large")

// kind names a file mode for messages.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "a special file"
}

// CheckRegular returns nil for a regular file's info and an error wrapping
// zenmetrics.ErrBadInput and ErrNotRegular for anything else.
func CheckRegular(st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%w: %w: it is %s", zenmetrics.ErrBadInput, ErrNotRegular, kind(st.Mode()))
}

// Open opens path for reading if it is a regular file (symbolic links are
// followed) and returns it with its info. The type is checked with Stat
// before the open, so a FIFO is never opened; the open itself is
// non-blocking where the OS has that flag (a FIFO swapped in between the
// Stat and the open cannot block it), and the type is checked again on the
// open file. Errors wrap zenmetrics.ErrBadInput and keep the os error
// (errors.Is(err, fs.ErrNotExist) holds for a missing file); they do not
// repeat the path, which the caller adds.
func Open(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, osErr(err)
	}
	if err := CheckRegular(st); err != nil {
		return nil, nil, err
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, nil, osErr(err)
	}
	st, err = f.Stat()
	if err == nil {
		err = CheckRegular(st)
	} else {
		err = osErr(err)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// ReadFile reads a regular file whole, refusing before the read one larger
// than limit bytes (limit ≤ 0: no limit). A file that grows while it is
// read is cut at limit+1 bytes and refused, so memory never exceeds the
// limit by more than one byte.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, st.Size(), limit)
}

// ReadAll reads f (whose size is size) whole under limit (≤ 0: none).
func ReadAll(f io.Reader, size, limit int64) ([]byte, error) {
	if limit > 0 && size > limit {
		return nil, fmt.Errorf("%w: %w: %d bytes, more than the limit of %d", zenmetrics.ErrBadInput, ErrTooLarge, size, limit)
	}
	r := f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	// Read into a buffer of the size Stat reported; a file that grew
	// since is read on, still under the limit.
	buf := make([]byte, size)
	n, err := io.ReadFull(r, buf)
	buf = buf[:n]
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		return buf, nil // shrank
	case nil:
	default:
		return nil, osErr(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, osErr(err)
	}
	buf = append(buf, rest...)
	if limit > 0 && int64(len(buf)) > limit {
		return nil, fmt.Errorf("%w: %w: grew past the limit of %d bytes while being read", zenmetrics.ErrBadInput, ErrTooLarge, limit)
	}
	return buf, nil
}

// osErr wraps an os error in zenmetrics.ErrBadInput, dropping the path a
// *fs.PathError carries (the caller names the file) but keeping the
// operation and the cause for errors.Is.
func osErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: %s: %w", zenmetrics.ErrBadInput, pe.Op, pe.Err)
	}
	return fmt.Errorf("%w: %w", zenmetrics.ErrBadInput, err)
}

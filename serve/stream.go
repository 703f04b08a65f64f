package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// decodeRequest parses one request strictly: one JSON object, no unknown
// fields (a misspelt "metrics" is an error, not a silent ssim2).
func decodeRequest(data []byte) (Request, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		// Keep the id of a request that is JSON but not a valid one.
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(data, &probe) == nil {
			req.ID = probe.ID
		}
		return req, fmt.Errorf("bad request: %v", err)
	}
	if dec.More() {
		return req, errors.New("bad request: more than one JSON value")
	}
	return req, nil
}

// lineWriter writes one JSON response per line, whole lines only, and
// flushes each at once so that a client waiting for it sees it.
type lineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func (lw *lineWriter) write(resp Response) {
	b, err := json.Marshal(resp)
	if err != nil { // cannot happen with these types; answer anyway
		b, _ = json.Marshal(Response{ID: resp.ID, Error: err.Error(), Kind: KindInternal})
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil {
		return
	}
	lw.w.Write(b)
	lw.w.WriteByte('\n')
	lw.err = lw.w.Flush()
}

// ServeStream reads requests, one JSON object per line, from r and writes
// one response per line to w, in completion order. It reads a line only
// when the queue has room for it, so a client that writes faster than the
// server scores is held back by the pipe. It returns at the end of r or
// when ctx ends; requests accepted by then are still answered by the
// workers, so call Shutdown before w is closed. Errors in a request are
// responses, never the end of the stream.
func (s *Server) ServeStream(ctx context.Context, r io.Reader, w io.Writer) error {
	out := &lineWriter{w: bufio.NewWriter(w)}
	done := make(chan error, 1)
	go func() { done <- s.readLines(r, out) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The reader may be blocked in Read, which cannot be interrupted
		// portably; it stays behind and, should a line still come, answers
		// it with KindShutdown.
		return nil
	}
}

func (s *Server) readLines(r io.Reader, out *lineWriter) error {
	max := s.cfg.MaxRequestBytes
	br := bufio.NewReaderSize(r, max+1)
	for {
		line, tooLong, err := readLine(br, max)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			switch req, perr := decodeRequest(line); {
			case tooLong:
				s.errs.Add(1)
				out.write(Response{Error: fmt.Sprintf("request longer than %d bytes", max), Kind: KindTooLarge})
			case perr != nil:
				s.errs.Add(1)
				out.write(Response{ID: req.ID, Error: perr.Error(), Kind: KindBadRequest})
			default:
				if aerr := s.accept(req, out.write, true); aerr != nil {
					out.write(Response{ID: req.ID, Error: aerr.Error(), Kind: KindShutdown})
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads one line (without its newline) of at most max bytes; a
// longer one is read to its end and discarded, and tooLong is set, so
// that memory stays bounded whatever the client sends.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

package serve

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Handler serves HTTP:
//
//	POST /score    one request as the body, its response as the answer
//	GET  /stats    the counters
//	GET  /healthz  "ok"
//
// A full queue is answered 503 with Retry-After at once (an HTTP client
// cannot be held back like a pipe, and holding its connection would only
// move the queue into the kernel); a body over MaxRequestBytes is 413.
// A request that fails as a whole gets the status of its kind (400, 404,
// 413, 422, 500, 503) with the JSON response as body; per-metric errors
// are in a 200 response's results.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /score", s.serveScore)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	})
	return mux
}

func (s *Server) serveScore(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxRequestBytes)))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		s.errs.Add(1)
		writeJSON(w, http.StatusRequestEntityTooLarge, Response{Error: "request body over the size limit", Kind: KindTooLarge})
		return
	}
	if err != nil {
		return // the client went away
	}
	req, err := decodeRequest(body)
	if err != nil {
		s.errs.Add(1)
		writeJSON(w, http.StatusBadRequest, Response{ID: req.ID, Error: err.Error(), Kind: KindBadRequest})
		return
	}
	ch := make(chan Response, 1) // buffered: a worker never waits for a gone client
	switch err := s.accept(req, func(resp Response) { ch <- resp }, false); {
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, Response{ID: req.ID, Error: err.Error(), Kind: KindBusy})
		return
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, Response{ID: req.ID, Error: err.Error(), Kind: KindShutdown})
		return
	}
	select {
	case resp := <-ch:
		writeJSON(w, statusOf(resp.Kind), resp)
	case <-r.Context().Done():
	}
}

// statusOf maps a request-level error kind to an HTTP status.
func statusOf(kind string) int {
	switch kind {
	case "":
		return http.StatusOK
	case KindBadRequest:
		return http.StatusBadRequest
	case KindNotFound:
		return http.StatusNotFound
	case KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case KindBadInput, KindSizeMismatch, KindUnsupported:
		return http.StatusUnprocessableEntity
	case KindBusy, KindShutdown, KindCanceled, KindOutOfMemory, KindDeviceLost:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
}

package http

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// Sentinel errors of the server.
var (
	ErrBodyTooLarge        = errors.New("http: request body too large")
	ErrUnsupportedEncoding = errors.New("http: unsupported Content-Encoding")
	ErrUnsupportedType     = errors.New("http: unsupported Content-Type")
	ErrCorruptBody         = errors.New("http: corrupt compressed body")
	ErrInvalidQuery        = errors.New("http: invalid query")
	ErrBadRequest          = errors.New("http: bad request")
	ErrUnavailable         = errors.New("http: unavailable")
)

// apiError is an error with the status and code it is answered with.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// classify maps an error to the status, code and message of its answer.
func classify(err error) (int, string, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.code, ae.msg
	}
	var pe *ingest.ParseError
	switch {
	case errors.As(err, &pe):
		return http.StatusBadRequest, api.CodeInvalidRow, pe.Error()
	case errors.Is(err, metadata.ErrTableNotFound):
		return http.StatusNotFound, api.CodeTableNotFound, err.Error()
	case errors.Is(err, metadata.ErrTableExists):
		return http.StatusConflict, api.CodeTableExists, err.Error()
	case errors.Is(err, model.ErrInvalidTable):
		return http.StatusBadRequest, api.CodeInvalidTableName, err.Error()
	case errors.Is(err, metadata.ErrInvalidConfig):
		return http.StatusBadRequest, api.CodeBadRequest, err.Error()
	case errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge, err.Error()
	case errors.Is(err, ErrUnsupportedEncoding), errors.Is(err, ErrUnsupportedType):
		return http.StatusUnsupportedMediaType, api.CodeUnsupportedMedia, err.Error()
	case errors.Is(err, ErrCorruptBody), errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, api.CodeBadRequest, err.Error()
	case errors.Is(err, ErrInvalidQuery):
		return http.StatusBadRequest, api.CodeInvalidQuery, err.Error()
	case errors.Is(err, ErrUnavailable), errors.Is(err, metadata.ErrFileNotFound):
		return http.StatusServiceUnavailable, api.CodeUnavailable, err.Error()
	}
	return http.StatusInternalServerError, api.CodeInternal, "internal error: " + err.Error()
}

func badQuery(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidQuery}, args...)...)
}

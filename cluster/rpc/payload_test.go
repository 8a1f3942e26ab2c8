package rpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
)

// blobRequest carries a payload beside its JSON.
type blobRequest struct {
	Name string `json:"name"`
	Blob []byte `json:"blob,omitempty"`
}

func (r blobRequest) SplitPayload() (any, []byte) {
	blob := r.Blob
	r.Blob = nil
	return r, blob
}

func (r *blobRequest) SetPayload(p []byte) { r.Blob = p }

// TestCallWithPayload: a PayloadRequest travels as its JSON header and its
// payload as raw bytes (not base64 in the JSON), and decodes whole.
func TestCallWithPayload(t *testing.T) {
	var mu sync.Mutex
	var got blobRequest
	var ctype string
	addr := startServer(t, func(ctx *fasthttp.RequestCtx) {
		var req blobRequest
		if DecodeRequest(ctx, 1<<20, &req) != nil {
			return
		}
		mu.Lock()
		got, ctype = req, string(ctx.Request.Header.ContentType())
		mu.Unlock()
		WriteResponse(ctx, 200, nil)
	})
	c, _ := newTestClient(t, Config{})
	blob := bytes.Repeat([]byte{0, 1, 2, 0xff}, 10000)
	if err := c.Call(t.Context(), addr, "/internal/blob", blobRequest{Name: "x", Blob: blob}, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Name != "x" || !bytes.Equal(got.Blob, blob) || ctype != contentTypePayload {
		t.Fatalf("server got %q, %d bytes (equal %v), content type %q", got.Name, len(got.Blob), bytes.Equal(got.Blob, blob), ctype)
	}
}

// TestDecodeWithPayloadBadInput: a malformed payload body, or one sent to
// an endpoint that takes none, is refused with a 4xx.
func TestDecodeWithPayloadBadInput(t *testing.T) {
	body := func(header string, payload string) []byte {
		b := binary.AppendUvarint(nil, uint64(len(header)))
		return append(append(b, header...), payload...)
	}
	type plain struct {
		Name string `json:"name"`
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		target any
		status int
		err    error
	}{
		{"no header length", nil, &blobRequest{}, 400, ErrBadRequest},
		{"header length past the end", append(binary.AppendUvarint(nil, 100), `{}`...), &blobRequest{}, 400, ErrBadRequest},
		{"bad header json", body(`{"name":`, "xx"), &blobRequest{}, 400, ErrBadRequest},
		{"unknown field", body(`{"nom":"a"}`, "xx"), &blobRequest{}, 400, ErrBadRequest},
		{"endpoint without payload", body(`{"name":"a"}`, "xx"), &plain{}, 415, ErrUnsupportedEncoding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.SetBody(tc.body)
			ctx.Request.Header.SetContentType(contentTypePayload)
			err := DecodeRequest(&ctx, 1<<20, tc.target)
			if !errors.Is(err, tc.err) || ctx.Response.StatusCode() != tc.status {
				t.Fatalf("err %v, status %d; want %v, %d", err, ctx.Response.StatusCode(), tc.err, tc.status)
			}
		})
	}
	// Identity-encoded: the payload is a copy, not the request's buffer.
	var ctx fasthttp.RequestCtx
	ctx.Request.SetBody(body(`{"name":"a"}`, "payload"))
	ctx.Request.Header.SetContentType(contentTypePayload)
	var req blobRequest
	if err := DecodeRequest(&ctx, 1<<20, &req); err != nil || req.Name != "a" || string(req.Blob) != "payload" {
		t.Fatalf("identity: %+v, %v", req, err)
	}
	ctx.Request.SetBody(bytes.Repeat([]byte("z"), 40))
	if string(req.Blob) != "payload" {
		t.Fatalf("the payload aliases the request body: %q", req.Blob)
	}
}

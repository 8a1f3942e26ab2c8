package rpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestAuthorized(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		header       *string // nil: no header
		want         bool
	}{
		{"no secret allows all", "", nil, true},
		{"no secret ignores header", "", ptr("anything"), true},
		{"right", "s3cret", ptr("s3cret"), true},
		{"missing", "s3cret", nil, false},
		{"empty", "s3cret", ptr(""), false},
		{"wrong", "s3cret", ptr("s3creT"), false},
		{"prefix", "s3cret", ptr("s3cre"), false},
		{"longer", "s3cret", ptr("s3cret2"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			if tc.header != nil {
				ctx.Request.Header.Set(SecretHeader, *tc.header)
			}
			if got := Authorized(&ctx, tc.secret); got != tc.want {
				t.Fatalf("Authorized = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func zstdBytes(s string) []byte { return encoder().EncodeAll([]byte(s), nil) }

func TestDecodeRequest(t *testing.T) {
	type target struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	bomb := zstdBytes(`{"name":"` + strings.Repeat("a", 1<<20) + `"}`) // ~100 bytes that inflate to 1 MiB
	for _, tc := range []struct {
		name        string
		body        []byte
		encoding    string
		contentType string
		limit       int
		want        target
		status      int // 0: success
		err         error
	}{
		{name: "identity", body: []byte(`{"name":"a","n":1}`), want: target{"a", 1}},
		{name: "zstd", body: zstdBytes(`{"name":"b","n":2}`), encoding: "zstd", want: target{"b", 2}},
		{name: "zstd upper case", body: zstdBytes(`{"n":3}`), encoding: "ZSTD", want: target{N: 3}},
		{name: "json with charset", body: []byte(`{"n":4}`), contentType: "application/json; charset=utf-8", want: target{N: 4}},
		{name: "trailing whitespace", body: []byte("{\"n\":5}\n\n"), want: target{N: 5}},
		{name: "exactly at limit", body: []byte(`{"n":6}`), limit: 7, want: target{N: 6}},
		{name: "identity over limit", body: []byte(`{"name":"toolong"}`), limit: 10, status: 413, err: ErrRequestTooLarge},
		{name: "zstd bomb", body: bomb, encoding: "zstd", limit: 64 << 10, status: 413, err: ErrRequestTooLarge},
		{name: "zstd over exact limit", body: zstdBytes(`{"name":"` + strings.Repeat("a", 100) + `"}`), encoding: "zstd",
			limit: 100, status: 413, err: ErrRequestTooLarge},
		{name: "corrupt zstd", body: []byte("definitely not zstd"), encoding: "zstd", status: 400, err: ErrBadRequest},
		{name: "gzip unsupported", body: []byte("x"), encoding: "gzip", status: 415, err: ErrUnsupportedEncoding},
		{name: "wrong content type", body: []byte(`{}`), contentType: "text/plain", status: 415, err: ErrUnsupportedEncoding},
		{name: "unknown field", body: []byte(`{"name":"a","extra":1}`), status: 400, err: ErrBadRequest},
		{name: "trailing data", body: []byte(`{"n":1}{"n":2}`), status: 400, err: ErrBadRequest},
		{name: "trailing garbage", body: []byte(`{"n":1}}`), status: 400, err: ErrBadRequest},
		{name: "empty", body: nil, status: 400, err: ErrBadRequest},
		{name: "not json", body: []byte(`name=a`), status: 400, err: ErrBadRequest},
		{name: "wrong type", body: []byte(`{"n":"one"}`), status: 400, err: ErrBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.SetBody(tc.body)
			if tc.encoding != "" {
				ctx.Request.Header.SetContentEncoding(tc.encoding)
			}
			if tc.contentType != "" {
				ctx.Request.Header.SetContentType(tc.contentType)
			}
			var got target
			err := DecodeRequest(&ctx, tc.limit, &got)
			if tc.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Fatalf("decoded %+v, want %+v", got, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if st := ctx.Response.StatusCode(); st != tc.status {
				t.Fatalf("answered %d, want %d", st, tc.status)
			}
			var eb errorResponse
			if err := json.Unmarshal(ctx.Response.Body(), &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("error body %q (%v)", ctx.Response.Body(), err)
			}
		})
	}
}

func TestDecodeRequestBadTarget(t *testing.T) {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetBodyString(`{}`)
	var notPointer struct{}
	if err := DecodeRequest(&ctx, 0, notPointer); err == nil {
		t.Fatal("decoded into a non-pointer")
	}
	if st := ctx.Response.StatusCode(); st != 500 {
		t.Fatalf("answered %d, want 500 for a handler bug", st)
	}
}

func TestWriteResponse(t *testing.T) {
	type answer struct {
		Text string `json:"text"`
	}
	want := answer{Text: strings.Repeat("tsdb ", 100)}
	for _, tc := range []struct {
		accept string
		zstd   bool
	}{
		{"", false},
		{"zstd", true},
		{"gzip, zstd", true},
		{"gzip;q=1.0, ZSTD;q=0.5", true},
		{"zstd;q=0", false},
		{"zstd; q=0.0", false},
		{"gzip", false},
		{"*", false},
		{"zstdx", false},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			if tc.accept != "" {
				ctx.Request.Header.Set("Accept-Encoding", tc.accept)
			}
			WriteResponse(&ctx, 201, want)
			if st := ctx.Response.StatusCode(); st != 201 {
				t.Fatalf("status %d", st)
			}
			if ct := string(ctx.Response.Header.ContentType()); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			body := ctx.Response.Body()
			enc := string(ctx.Response.Header.ContentEncoding())
			if tc.zstd {
				if enc != "zstd" {
					t.Fatalf("Content-Encoding %q, want zstd", enc)
				}
				var err error
				if body, err = decompress(nil, body, 1<<20); err != nil {
					t.Fatal(err)
				}
			} else if enc != "" {
				t.Fatalf("Content-Encoding %q, want none", enc)
			}
			var got answer
			if err := json.Unmarshal(body, &got); err != nil || got != want {
				t.Fatalf("body %q (%v)", body, err)
			}
		})
	}
}

func TestWriteResponseEncodeFailure(t *testing.T) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Accept-Encoding", "zstd")
	WriteResponse(&ctx, 200, map[string]any{"f": func() {}})
	if st := ctx.Response.StatusCode(); st != 500 {
		t.Fatalf("status %d, want 500", st)
	}
	assertErrorBody(t, &ctx, CodeInternal)
}

func TestWriteErrorReplacesAnswer(t *testing.T) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Accept-Encoding", "zstd")
	WriteResponse(&ctx, 200, map[string]string{"partial": "answer"})
	WriteError(&ctx, 503, CodeUnavailable, "draining")
	if st := ctx.Response.StatusCode(); st != 503 {
		t.Fatalf("status %d", st)
	}
	if enc := ctx.Response.Header.ContentEncoding(); len(enc) != 0 {
		t.Fatalf("Content-Encoding %q left from the replaced answer", enc)
	}
	if got := assertErrorBody(t, &ctx, CodeUnavailable); got.Message != "draining" {
		t.Fatalf("message %q", got.Message)
	}
}

func TestWriteResponseNil(t *testing.T) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Accept-Encoding", "zstd")
	WriteResponse(&ctx, 204, nil)
	if st := ctx.Response.StatusCode(); st != 204 || len(ctx.Response.Body()) != 0 {
		t.Fatalf("status %d body %q", st, ctx.Response.Body())
	}
}

func assertErrorBody(t *testing.T, ctx *fasthttp.RequestCtx, code string) errorBody {
	t.Helper()
	var eb errorResponse
	if err := json.Unmarshal(ctx.Response.Body(), &eb); err != nil {
		t.Fatalf("error body %q: %v", ctx.Response.Body(), err)
	}
	if eb.Error.Code != code {
		t.Fatalf("code %q, want %q", eb.Error.Code, code)
	}
	return eb.Error
}

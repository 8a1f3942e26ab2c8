package rpc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Media types of request bodies.
const (
	contentTypeJSON = "application/json"
	// contentTypePayload is a JSON header followed by raw bytes:
	//
	//	body := len(header):uvarint header payload
	//
	// zstd-compressed like every request.
	contentTypePayload = "application/x-tsdb-json-payload"
)

// PayloadRequest is a request whose bulk bytes travel after its JSON
// instead of inside it: a []byte field inside JSON is base64 text, which
// costs more to encode and decode than the rest of a push together
// (replication's rows, wire.PushRequest). The receiving type (a pointer)
// must implement PayloadReceiver.
type PayloadRequest interface {
	// SplitPayload returns the request to encode as JSON, without its
	// payload, and the payload.
	SplitPayload() (header any, payload []byte)
}

// PayloadReceiver takes the payload that came after a request's JSON.
type PayloadReceiver interface {
	// SetPayload stores payload, which the receiver may keep.
	SetPayload(payload []byte)
}

// encodeWithPayload encodes pr as its JSON header and payload.
func encodeWithPayload(pr PayloadRequest) (requestBody, error) {
	header, payload := pr.SplitPayload()
	js, err := json.Marshal(header)
	if err != nil {
		return requestBody{}, fmt.Errorf("rpc: encode request: %w", err)
	}
	plain := make([]byte, 0, binary.MaxVarintLen64+len(js)+len(payload))
	plain = binary.AppendUvarint(plain, uint64(len(js)))
	plain = append(append(plain, js...), payload...)
	return requestBody{data: encoder().EncodeAll(plain, make([]byte, 0, len(plain)/2+64)), contentType: contentTypePayload}, nil
}

// decodeWithPayload decodes a JSON-with-payload body into v, which must be
// a PayloadReceiver; the payload aliases body.
func decodeWithPayload(body []byte, v any) error {
	pr, ok := v.(PayloadReceiver)
	if !ok {
		return fmt.Errorf("%w: this endpoint takes no payload beside its JSON", ErrUnsupportedEncoding)
	}
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(len(body)-k) {
		return fmt.Errorf("%w: bad JSON header length", ErrBadRequest)
	}
	if err := unmarshalStrict(body[k:k+int(n)], v); err != nil {
		return err
	}
	pr.SetPayload(body[k+int(n):])
	return nil
}

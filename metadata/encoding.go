package metadata

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// maxDecodedSize bounds the decompressed size of a METADATA file, so a
// corrupt or hostile input cannot exhaust memory. A map of 120k partitions
// is about 40 MB of JSON.
const maxDecodedSize = 1 << 30

// codec holds the zstd encoder and decoder shared by Encode and Decode. Both
// are safe for concurrent use through EncodeAll/DecodeAll and are built on
// first use.
var codec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(true))
	if err != nil {
		panic(fmt.Sprintf("metadata: zstd encoder: %v", err)) // only bad options fail
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(maxDecodedSize))
	if err != nil {
		panic(fmt.Sprintf("metadata: zstd decoder: %v", err))
	}
	return enc, dec
})

// Encode returns the file's canonical encoding: compact JSON of the
// validated file (nil slices written as []) compressed by one zstd frame.
// The same File always yields the same bytes with the same library version.
func Encode(f *File) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("metadata: encode: %w", err)
	}
	js, err := json.Marshal(f.Clone())
	if err != nil {
		return nil, fmt.Errorf("metadata: encode %s/%s: %w", f.Table, f.TxnID, err)
	}
	enc, _ := codec()
	return enc.EncodeAll(js, make([]byte, 0, len(js)/4+64)), nil
}

// Decode parses and validates an encoded file. Unknown JSON fields are
// rejected: a server must not act on a map it does not fully understand.
// Errors wrap ErrCorruptFile.
func Decode(b []byte) (*File, error) {
	js, err := decompress(b)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.DisallowUnknownFields()
	var f File
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: json: %w", ErrCorruptFile, err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the file", ErrCorruptFile)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptFile, err)
	}
	return &f, nil
}

func decompress(b []byte) ([]byte, error) {
	_, dec := codec()
	js, err := dec.DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %w", ErrCorruptFile, err)
	}
	return js, nil
}

// fileHeader is the part of a file the store needs to walk the chain.
type fileHeader struct {
	Table       string `json:"table"`
	TxnID       string `json:"txnid"`
	TxnSeq      uint64 `json:"txnseq"`
	ParentTxnID string `json:"parent_txnid"`
}

// decodeHeader reads only the header fields of an encoded file, without
// building the partition list.
func decodeHeader(b []byte) (fileHeader, error) {
	js, err := decompress(b)
	if err != nil {
		return fileHeader{}, err
	}
	var h fileHeader
	if err := json.Unmarshal(js, &h); err != nil {
		return fileHeader{}, fmt.Errorf("%w: json: %w", ErrCorruptFile, err)
	}
	return h, nil
}

// CheckEncoded decodes encoded and checks that it is the file of (table,
// txnID). A metadata server receiving a file from a coordinator calls it
// before FileStore.Put.
func CheckEncoded(table, txnID string, encoded []byte) (*File, error) {
	f, err := Decode(encoded)
	if err != nil {
		return nil, err
	}
	if f.Table != table || f.TxnID != txnID {
		return nil, fmt.Errorf("%w: file is %s/%s, expected %s/%s", ErrCorruptFile, f.Table, f.TxnID, table, txnID)
	}
	return f, nil
}

// checksumPrefix names the hash function in a checksum string.
const checksumPrefix = "sha256:"

// Checksum returns "sha256:<hex>" of the encoded bytes; TableConfig records
// it as metadata_checksum.
func Checksum(encoded []byte) string {
	sum := sha256.Sum256(encoded)
	return checksumPrefix + hex.EncodeToString(sum[:])
}

// txnIDBytes is the size of a txnid: 160 random bits.
const txnIDBytes = 20

// NewTxnID returns a random 160-bit transaction id as 40 lowercase hex
// characters, from crypto/rand.
func NewTxnID() string {
	var b [txnIDBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for name, f := range map[string]*File{"plain": fourPartitions(), "split": splitFile()} {
		t.Run(name, func(t *testing.T) {
			enc, err := Encode(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, f.Clone()) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, f.Clone())
			}
			again, err := Encode(got)
			if err != nil || !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding the decoded file changed the bytes (%v)", err)
			}
			enc2, _ := Encode(f)
			if !bytes.Equal(enc, enc2) {
				t.Fatal("Encode is not deterministic")
			}
		})
	}
}

func TestEncodeJSONShape(t *testing.T) {
	enc, err := Encode(fourPartitions())
	if err != nil {
		t.Fatal(err)
	}
	js, err := decompress(enc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"table":"cpu"`, `"txnid":"bbbb`, `"txnseq":2`, `"parent_txnid":"aaaa`,
		`"begin":null,"end":0,`, `"begin":200,"end":null`, `"joining":[]`, `"server_id":"s1","placement_id":"`} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("encoded JSON lacks %s:\n%s", want, js)
		}
	}
	if bytes.Contains(js, []byte(`"split"`)) || bytes.Contains(js, []byte(`"offline"`)) {
		t.Errorf("unset split/offline written: %s", js)
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	f := fourPartitions()
	f.Partitions[2].Begin = i64(1)
	if _, err := Encode(f); err == nil {
		t.Fatal("encoded an invalid file")
	}
}

func TestDecodeCorrupt(t *testing.T) {
	enc, _ := codec()
	z := func(s string) []byte { return enc.EncodeAll([]byte(s), nil) }
	good, _ := json.Marshal(fourPartitions())
	invalid := fourPartitions()
	invalid.TxnSeq = 0
	invalidJS, _ := json.Marshal(invalid)
	for name, b := range map[string][]byte{
		"not zstd":      []byte("hello"),
		"empty":         nil,
		"truncated":     z(string(good))[:20],
		"not json":      z("{nope"),
		"unknown field": z(strings.Replace(string(good), `"table"`, `"extra":1,"table"`, 1)),
		"trailing":      z(string(good) + " {}"),
		"invalid file":  z(string(invalidJS)),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(b); !errors.Is(err, ErrCorruptFile) {
				t.Fatalf("got %v, want ErrCorruptFile", err)
			}
		})
	}
	if _, err := Decode(z(string(good))); err != nil {
		t.Fatalf("control: %v", err)
	}
}

func TestCheckEncoded(t *testing.T) {
	b, _ := Encode(fourPartitions())
	if _, err := CheckEncoded("cpu", testTxn('b'), b); err != nil {
		t.Fatal(err)
	}
	wantErr(t, func() error { _, err := CheckEncoded("mem", testTxn('b'), b); return err }(), ErrCorruptFile, "expected mem/")
	wantErr(t, func() error { _, err := CheckEncoded("cpu", testTxn('c'), b); return err }(), ErrCorruptFile, "expected cpu/cccc")
}

func TestChecksum(t *testing.T) {
	a, b := Checksum([]byte("a")), Checksum([]byte("b"))
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 || a == b || a != Checksum([]byte("a")) {
		t.Fatalf("Checksum: %s %s", a, b)
	}
}

func TestNewTxnID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewTxnID()
		if len(id) != 40 || !ValidTxnID(id) || seen[id] {
			t.Fatalf("bad or repeated txnid %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "abc", strings.Repeat("A", 40), strings.Repeat("g", 40), strings.Repeat("a", 41)} {
		if ValidTxnID(bad) {
			t.Errorf("ValidTxnID(%q) = true", bad)
		}
	}
}

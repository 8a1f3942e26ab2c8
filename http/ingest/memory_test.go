package ingest

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// TestFieldMemory parses bodies of every format and of sizes that grow and
// shrink, each twice: by the package's function and by one FieldMemory
// Reset between parses, as the HTTP server reuses it. The rows must be the
// same, the rows of a parse must keep their fields while later parses run
// before the Reset, and after a Reset the memory must be lent again (a
// FieldMemory that allocated afresh each time, or lent a chunk still in
// use, fails it).
func TestFieldMemory(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var mem FieldMemory
	formats := []string{"lp", "json", "ndjson"}
	for round := range 60 {
		format := formats[round%len(formats)]
		n := []int{1, 3, 700, 5000, 40, 20000}[rng.Intn(6)]
		body := fieldMemoryBody(format, n, rng)
		parse := func(m *FieldMemory) []model.Row {
			var rows []model.Row
			var err error
			switch {
			case format == "lp" && m == nil:
				rows, err = ParseLineProtocol(body, Nanosecond, testNow, nil)
			case format == "lp":
				rows, err = m.ParseLineProtocol(body, Nanosecond, testNow, nil)
			case format == "json" && m == nil:
				rows, err = ParseJSON(body, nil)
			case format == "json":
				rows, err = m.ParseJSON(body, nil)
			case m == nil:
				rows, err = ParseNDJSON(body, nil)
			default:
				rows, err = m.ParseNDJSON(body, nil)
			}
			if err != nil {
				t.Fatalf("round %d (%s, %d rows): %v", round, format, n, err)
			}
			return rows
		}
		want := parse(nil)
		first := parse(&mem)
		second := parse(&mem) // lent while first is still in use
		for _, got := range [][]model.Row{first, second} {
			checkRows(t, got)
			if d := diffRows(got, want); d != "" {
				t.Fatalf("round %d (%s, %d rows): %s", round, format, n, d)
			}
		}
		lent := mem.next
		mem.Reset()
		if mem.next != 0 || len(mem.chunks) == 0 && lent > 0 && n*3 <= maxFieldMemory {
			t.Fatalf("round %d: after Reset next %d, %d chunks kept of %d lent", round, mem.next, len(mem.chunks), lent)
		}
		for _, c := range mem.chunks {
			for _, f := range c[:cap(c)] {
				if f != (model.Field{}) {
					t.Fatalf("round %d: a kept chunk holds %+v after Reset", round, f)
				}
			}
		}
	}
	// The same body again and again: the chunks are reused, not made.
	body := fieldMemoryBody("lp", 5000, rng)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := mem.ParseLineProtocol(body, Nanosecond, testNow, make([]model.Row, 0, 5000)); err != nil {
			t.Fatal(err)
		}
		mem.Reset()
	})
	plain := testing.AllocsPerRun(20, func() {
		if _, err := ParseLineProtocol(body, Nanosecond, testNow, make([]model.Row, 0, 5000)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs >= plain {
		t.Fatalf("%v allocations a parse with a FieldMemory, %v without", allocs, plain)
	}
}

// fieldMemoryBody returns n rows of one to five fields in format.
func fieldMemoryBody(format string, n int, rng *rand.Rand) []byte {
	var b strings.Builder
	if format == "json" {
		b.WriteString("[")
	}
	for i := range n {
		fields := 1 + rng.Intn(5)
		switch format {
		case "lp":
			fmt.Fprintf(&b, "cpu,host=h%d ", i%50)
			for f := range fields {
				if f > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "f%d=%d.5", (f*7+i)%5, i)
			}
			fmt.Fprintf(&b, " %d\n", 1_000+i)
		default:
			if format == "json" && i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"series":"cpu,host=h%d","time":%d,"fields":{`, i%50, 1_000+i)
			for f := range fields {
				if f > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `"g%d":%d.25`, f, i)
			}
			b.WriteString("}}")
			if format == "ndjson" {
				b.WriteString("\n")
			}
		}
	}
	if format == "json" {
		b.WriteString("]")
	}
	return []byte(b.String())
}

package influx

import "testing"

// TestUnknownEpochIsNs checks that an epoch InfluxDB does not know answers
// nanoseconds, as InfluxDB does, rather than failing the request.
func TestUnknownEpochIsNs(t *testing.T) {
	for _, ep := range []string{"d", "ns", "n", "nanos"} {
		got := run(t, testData(), `SELECT value FROM cpu WHERE host = 'c'`, Options{DB: "telegraf", Epoch: ep})
		if want := `{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","value"],"values":[[1700000005000000000,100]]}]}]}`; got != want {
			t.Errorf("epoch %q: got %s\nwant %s", ep, got, want)
		}
	}
}

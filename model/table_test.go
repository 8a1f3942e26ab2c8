package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDurationMarshal(t *testing.T) {
	for _, tc := range []struct {
		d    Duration
		want string
	}{
		{0, `"0s"`},
		{Duration(120 * time.Second), `"2m0s"`},
		{Duration(1500 * time.Millisecond), `"1.5s"`},
		{Duration(-time.Second), `"-1s"`},
	} {
		b, err := json.Marshal(tc.d)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%d) = %s, %v; want %s", tc.d, b, err, tc.want)
		}
	}
}

func TestDurationUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Duration
	}{
		{`"120s"`, Duration(120 * time.Second)},
		{`"2m0s"`, Duration(120 * time.Second)},
		{`"0s"`, 0},
		{`"1h30m"`, Duration(90 * time.Minute)},
		{`60000000000`, Duration(time.Minute)},
		{` 5 `, 5},
		{`-7`, -7},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || d != tc.want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", tc.in, d, err, tc.want)
		}
	}
	for _, bad := range []string{`"abc"`, `"120"`, `1.5`, `true`, `{}`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", bad, d)
		}
	}
	d := Duration(3)
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d != 3 {
		t.Errorf("null changed the value: %v, %v", d, err)
	}
}

func TestDurationRoundTrip(t *testing.T) {
	for _, d := range []Duration{0, 1, Duration(time.Hour * 24 * 30), Duration(123456789)} {
		b, _ := json.Marshal(d)
		var got Duration
		if err := json.Unmarshal(b, &got); err != nil || got != d {
			t.Errorf("round trip %v via %s = %v, %v", d, b, got, err)
		}
	}
}

func TestEnsureDefaults(t *testing.T) {
	var c TableConfig
	c.EnsureDefaults()
	want := TableConfig{ReplicationFactor: 3, PartitionSizeTarget: 1 << 30,
		Smear: SmearConfig{Enabled: true, MaxDelay: Duration(120 * time.Second), KeyrangeThreshold: Duration(60 * time.Second)}}
	if c.ReplicationFactor != want.ReplicationFactor || c.PartitionSizeTarget != want.PartitionSizeTarget || c.Smear != want.Smear || c.Retention != 0 {
		t.Fatalf("defaults = %+v", c)
	}
	// Set fields stay; an enabled smear with a zero duration gets the default.
	c = TableConfig{ReplicationFactor: 1, PartitionSizeTarget: 256 << 10, Retention: Duration(time.Hour),
		Smear: SmearConfig{Enabled: true, MaxDelay: Duration(time.Second)}}
	c.EnsureDefaults()
	if c.ReplicationFactor != 1 || c.PartitionSizeTarget != 256<<10 || c.Retention != Duration(time.Hour) ||
		c.Smear != (SmearConfig{true, Duration(time.Second), DefaultSmearKeyrangeThreshold}) {
		t.Fatalf("EnsureDefaults changed set fields: %+v", c)
	}
	// A disabled smear with a duration set stays disabled.
	c = TableConfig{Smear: SmearConfig{MaxDelay: Duration(time.Second)}}
	c.EnsureDefaults()
	if c.Smear.Enabled {
		t.Fatalf("smear re-enabled: %+v", c.Smear)
	}
}

func TestNewTableConfigDecodeOnto(t *testing.T) {
	c := NewTableConfig("cpu")
	if err := json.Unmarshal([]byte(`{"replication_factor": 1, "smear": {"enabled": false}}`), &c); err != nil {
		t.Fatal(err)
	}
	c.EnsureDefaults()
	if c.ReplicationFactor != 1 || c.Smear.Enabled || c.Smear.MaxDelay != DefaultSmearMaxDelay || c.PartitionSizeTarget != DefaultPartitionSizeTarget {
		t.Fatalf("got %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTableConfigValidate(t *testing.T) {
	good := NewTableConfig("cpu_1")
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	bad := TableConfig{
		Name:                "1cpu",
		ReplicationFactor:   8,
		PartitionSizeTarget: 1000,
		Retention:           -1,
		Smear:               SmearConfig{MaxDelay: -1, KeyrangeThreshold: -2},
		MetadataTxnID:       "xyz",
		MetadataServers:     []string{"a", "a", ""},
	}
	err := bad.Validate()
	if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("got %v, want ErrInvalidConfig and model.ErrInvalidTable", err)
	}
	for _, field := range []string{"name:", "replication_factor:", "partition_size_target:", "retention:",
		"smear.max_delay:", "smear.keyrange_threshold:", "metadata_txnid:", `metadata_servers: "a" listed twice`,
		"metadata_servers: empty server id"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %q: %v", field, err)
		}
	}
	for _, rf := range []int{0, -1, 8} {
		c := NewTableConfig("cpu")
		c.ReplicationFactor = rf
		wantErr(t, c.Validate(), ErrInvalidConfig, "replication_factor")
	}
	for _, rf := range []int{1, 7} {
		c := NewTableConfig("cpu")
		c.ReplicationFactor = rf
		if err := c.Validate(); err != nil {
			t.Errorf("rf %d: %v", rf, err)
		}
	}
	c := NewTableConfig("cpu")
	c.PartitionSizeTarget = MinPartitionSizeTarget
	if err := c.Validate(); err != nil {
		t.Errorf("64 KiB target: %v", err)
	}
}

func TestParseDurationDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90s": 90 * time.Second, "0d": 0,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "30x", "1d-1h", "99999999999999999d", ""} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

package membership

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestValidateID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"s1", true},
		{"node-7.eu_west", true},
		{strings.Repeat("a", MaxIDLen), true},
		{"", false},
		{strings.Repeat("a", MaxIDLen+1), false},
		{"a/b", false},
		{"a\nb", false},
		{"a\x7f", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if err := ValidateID(tc.id); (err == nil) != tc.ok {
				t.Fatalf("ValidateID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
			}
		})
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		c := Config{Client: &clientv3.Client{}, Self: Info{ID: "s1", Addr: "a:1"}}
		c.EnsureDefaults()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if c.Prefix != "/tsdb/" || c.TTL != DefaultTTL || c.RefreshEvery != DefaultRefreshEvery ||
			c.CallTimeout != DefaultCallTimeout || c.Logger == nil || c.Self.StartedAt.IsZero() ||
			c.Self.StartedAt.Location() != time.UTC {
			t.Fatalf("defaults not applied: %+v", c)
		}
	})
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"no client", func(c *Config) { c.Client = nil }, "Client"},
		{"no id", func(c *Config) { c.Self.ID = "" }, "Self.ID"},
		{"no addr", func(c *Config) { c.Self.Addr = "" }, "Self.Addr"},
		{"short ttl", func(c *Config) { c.TTL = 500 * time.Millisecond }, "TTL"},
		{"negative refresh", func(c *Config) { c.RefreshEvery = -time.Second }, "RefreshEvery"},
		{"negative timeout", func(c *Config) { c.CallTimeout = -time.Second }, "CallTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Client: &clientv3.Client{}, Self: Info{ID: "s1", Addr: "a:1"}}
			c.EnsureDefaults()
			tc.mutate(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig naming %s", err, tc.field)
			}
		})
	}
}

func TestTTLSeconds(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{{time.Second, 1}, {1500 * time.Millisecond, 2}, {10 * time.Second, 10}} {
		c := Config{TTL: tc.ttl}
		if got := c.ttlSeconds(); got != tc.want {
			t.Errorf("ttlSeconds(%v) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"", "/tsdb/servers/s1"},
		{"/tsdb/", "/tsdb/servers/s1"},
		{"/x", "/x/servers/s1"},
	} {
		if got := ServerKey(tc.prefix, "s1"); got != tc.want {
			t.Errorf("ServerKey(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func TestDecodeInfo(t *testing.T) {
	const p = "/tsdb/servers/"
	for _, tc := range []struct {
		name, key, value string
		ok, bad          bool
		want             Info
	}{
		{"good", p + "s1", `{"id":"s1","addr":"a:1","summary":{"partitions":3}}`, true, false,
			Info{ID: "s1", Addr: "a:1", Summary: Summary{Partitions: 3}}},
		{"garbage keeps the member", p + "s1", `{`, true, true, Info{ID: "s1"}},
		{"id mismatch: key wins", p + "s1", `{"id":"s2","addr":"a:1"}`, true, true, Info{ID: "s1", Addr: "a:1"}},
		{"deeper key", p + "s1/x", `{}`, false, false, Info{}},
		{"other prefix", "/tsdb/tables/t", `{}`, false, false, Info{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := decodeInfo(p, []byte(tc.key), []byte(tc.value))
			if ok != tc.ok || (err != nil) != tc.bad || !got.equal(tc.want) {
				t.Fatalf("decodeInfo = %+v, %v, %v; want %+v, %v, bad=%v", got, ok, err, tc.want, tc.ok, tc.bad)
			}
		})
	}
}

package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultPrefix is the etcd key prefix used when Config.Prefix is empty.
const DefaultPrefix = "/tsdb/"

// Defaults of Config (DESIGN.md section 3).
const (
	// DefaultTTL is the lease TTL: a crashed server's key disappears at most
	// this long after its last keep-alive.
	DefaultTTL = 10 * time.Second
	// DefaultRefreshEvery is how often the summary is rewritten (only when it
	// changed), keeping etcd's history growth bounded.
	DefaultRefreshEvery = 10 * time.Second
	// DefaultCallTimeout bounds one etcd call (grant, put, revoke, get).
	DefaultCallTimeout = 5 * time.Second
	// MaxIDLen bounds a server id; it is one etcd key segment.
	MaxIDLen = 256
)

// Info is what a server publishes about itself at <prefix>servers/<id>, as
// JSON: {"id", "addr", "tls", "started_at", "summary"}. It stays a few hundred
// bytes: aggregates only, never per-partition statistics (those travel to
// the master over the internal API).
type Info struct {
	// ID is the server id, unique in the cluster and stable across restarts.
	ID string `json:"id"`
	// Addr is the address peers and front ends reach the server at.
	Addr string `json:"addr"`
	// TLS is set when the server serves HTTPS only (tsdb server
	// --tls-cert-file): peers call it at https://Addr.
	TLS bool `json:"tls,omitempty"`
	// StartedAt is when the server process started (UTC).
	StartedAt time.Time `json:"started_at"`
	// Summary holds the server's load aggregates as of the last rewrite.
	Summary Summary `json:"summary"`
}

// Summary is a server's load in aggregate, rewritten at most every
// Config.RefreshEvery.
type Summary struct {
	// Partitions is the number of partition replicas the server holds.
	Partitions int `json:"partitions"`
	// Bytes is the total size of those replicas on disk.
	Bytes uint64 `json:"bytes"`
	// InsertRowsPerSec is the recent insert rate the server accepted.
	InsertRowsPerSec float64 `json:"insert_rows_per_sec"`
	// SmearQueueRows and SmearQueueBytes are the depth of the server's
	// smear queue.
	SmearQueueRows  int64 `json:"smear_queue_rows,omitempty"`
	SmearQueueBytes int64 `json:"smear_queue_bytes,omitempty"`
}

// equal reports whether a and b carry the same information (times compared
// with Equal, so location and monotonic readings do not matter).
func (a Info) equal(b Info) bool {
	return a.ID == b.ID && a.Addr == b.Addr && a.TLS == b.TLS && a.StartedAt.Equal(b.StartedAt) && a.Summary == b.Summary
}

// Config configures Register.
type Config struct {
	// Client is the etcd client; required. The caller owns and closes it,
	// after closing the Registration.
	Client *clientv3.Client
	// Prefix is the cluster's etcd key prefix; default "/tsdb/". A missing
	// trailing "/" is added.
	Prefix string
	// Self is what this server publishes. ID and Addr are required; a zero
	// StartedAt becomes the time of Register.
	Self Info
	// TTL is the lease TTL, rounded up to whole seconds; default 10s,
	// minimum 1s. etcd may raise it to its own minimum; the granted TTL is
	// the one used.
	TTL time.Duration
	// RefreshEvery is how often Summary is sampled and, if it changed, the
	// key rewritten; default 10s.
	RefreshEvery time.Duration
	// Summary, if set, is called at each (re-)registration and on every
	// refresh; its result replaces Self.Summary. It runs on the
	// registration's goroutine and must return quickly.
	Summary func() Summary
	// CallTimeout bounds each etcd call; default 5s.
	CallTimeout time.Duration
	// Logger receives state changes (registered, lost, re-registered);
	// default: discard.
	Logger *slog.Logger

	// keepAliveOnce, when set by a test, replaces Client.KeepAliveOnce so
	// keep-alive failures can be injected.
	keepAliveOnce func(context.Context, clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error)
}

// EnsureDefaults fills zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	c.Prefix = normalizePrefix(c.Prefix)
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.RefreshEvery == 0 {
		c.RefreshEvery = DefaultRefreshEvery
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Self.StartedAt.IsZero() {
		c.Self.StartedAt = time.Now()
	}
	c.Self.StartedAt = c.Self.StartedAt.UTC().Round(0)
}

// Validate reports every problem of c at once, each naming its field.
func (c *Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if err := ValidateID(c.Self.ID); err != nil {
		errs = append(errs, fmt.Errorf("Self.ID: %w", err))
	}
	if c.Self.Addr == "" {
		errs = append(errs, errors.New("Self.Addr is required"))
	}
	if c.TTL < time.Second {
		errs = append(errs, fmt.Errorf("TTL %v is below 1s", c.TTL))
	}
	if c.RefreshEvery <= 0 {
		errs = append(errs, fmt.Errorf("RefreshEvery %v must be positive", c.RefreshEvery))
	}
	if c.CallTimeout <= 0 {
		errs = append(errs, fmt.Errorf("CallTimeout %v must be positive", c.CallTimeout))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
}

// ttlSeconds is the lease TTL to ask etcd for: TTL rounded up to seconds.
func (c *Config) ttlSeconds() int64 {
	return int64((c.TTL + time.Second - 1) / time.Second)
}

// ValidateID checks that id can name a server: non-empty, at most MaxIDLen
// bytes, and free of "/" and control characters (it is one key segment).
func ValidateID(id string) error {
	switch {
	case id == "":
		return errors.New("empty server id")
	case len(id) > MaxIDLen:
		return fmt.Errorf("server id longer than %d bytes", MaxIDLen)
	case strings.ContainsAny(id, "/"):
		return fmt.Errorf("server id %q contains '/'", id)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("server id %q contains a control character", id)
		}
	}
	return nil
}

// normalizePrefix applies the default and the trailing "/", with the same
// rules as the metadata package.
func normalizePrefix(prefix string) string {
	if prefix == "" {
		return DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix
}

// ServersPrefix returns the key prefix of the server registrations, e.g.
// "/tsdb/servers/" ("" means the default prefix).
func ServersPrefix(prefix string) string {
	return normalizePrefix(prefix) + "servers/"
}

// ServerKey returns the key a server registers at, e.g. "/tsdb/servers/s1".
func ServerKey(prefix, id string) string {
	return ServersPrefix(prefix) + id
}

// encodeInfo is the value stored in etcd: compact JSON.
func encodeInfo(info Info) (string, error) {
	b, err := json.Marshal(info)
	if err != nil {
		return "", fmt.Errorf("membership: encode info: %w", err)
	}
	return string(b), nil
}

// decodeInfo decodes the value of key under serversPrefix. Membership is the
// presence of the key, so a value that does not decode still yields an Info
// carrying the id taken from the key, with the decode error returned beside
// it for logging; ok is false when the key is not a server key at all.
func decodeInfo(serversPrefix string, key, value []byte) (info Info, ok bool, err error) {
	id, ok := idFromKey(serversPrefix, key)
	if !ok {
		return Info{}, false, nil
	}
	if jerr := json.Unmarshal(value, &info); jerr != nil {
		err = fmt.Errorf("membership: decode %s: %w", key, jerr)
		info = Info{}
	} else if info.ID != id {
		err = fmt.Errorf("membership: %s holds id %q; the key's id wins", key, info.ID)
	}
	info.ID = id
	return info, true, err
}

// idFromKey returns the server id of a key under serversPrefix; false for
// keys that are not server keys (deeper paths, invalid ids).
func idFromKey(serversPrefix string, key []byte) (string, bool) {
	id, found := strings.CutPrefix(string(key), serversPrefix)
	if !found || ValidateID(id) != nil {
		return "", false
	}
	return id, true
}

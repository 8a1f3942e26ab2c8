package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/internal/bytesize"
	"github.com/tsdb/tsdb/node"
)

// TestServerSizeFlags: every size flag of tsdb server takes units (plain
// numbers stay bytes) and reaches the node's configuration; a bad size is
// refused with one clear line naming the flag.
func TestServerSizeFlags(t *testing.T) {
	var s serverFlags
	cmd := s.command()
	if err := cmd.ParseFlags([]string{"--id", "s1", "--data", t.TempDir(),
		"--write-limit", "250MB", "--smear-queue-max-bytes", "1GiB", "--max-body-bytes", "64MiB", "--max-subquery-bytes", "524288"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WriteLimit != 250_000_000 || cfg.SmearMaxBytes != 1<<30 || cfg.MaxBodyBytes != 64<<20 || cfg.MaxSubQueryBytes != 512<<10 {
		t.Fatalf("write limit %d, smear queue %d, max body %d, max sub-query %d",
			cfg.WriteLimit, cfg.SmearMaxBytes, cfg.MaxBodyBytes, cfg.MaxSubQueryBytes)
	}

	// Through the whole command: 250MB is accepted (what stops the command
	// is the next bad flag), "lots" is refused.
	if _, err := run("server", "--id", "s1", "--data", "x", "--write-limit", "250MB", "--listen", "nope"); err == nil ||
		!strings.Contains(err.Error(), "--listen") {
		t.Fatalf("--write-limit 250MB with a bad --listen: %v, want the --listen error", err)
	}
	out, err := run("server", "--id", "s1", "--data", "x", "--write-limit", "lots")
	if err == nil {
		t.Fatal("--write-limit lots accepted")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "--write-limit") || !strings.Contains(msg, `invalid size "lots"`) ||
		!strings.Contains(msg, "250MB") {
		t.Errorf("error %q should be one line naming --write-limit, the bad size and an example", msg)
	}
	if strings.Contains(out, "Usage:") || exitCode(err) != 2 {
		t.Errorf("printed the usage or exit code %d: %s", exitCode(err), out)
	}
}

// TestDevSealFlags: dev's --seal-quiet, --seal-idle and --seal-after
// reach every server's configuration as server's do.
func TestDevSealFlags(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		quiet, idle, after time.Duration
	}{
		{nil, node.DefaultSealQuiet, node.DefaultSealIdle, node.DefaultSealAfter},
		{[]string{"--seal-quiet", "2s", "--seal-idle", "300ms", "--seal-after", "1h"}, 2 * time.Second, 300 * time.Millisecond, time.Hour},
		{[]string{"--seal-quiet", "0", "--seal-idle", "0", "--seal-after", "-1s"}, -1, -1, -1},
	} {
		cmd := newDevCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		quiet, errQ := cmd.Flags().GetDuration("seal-quiet")
		idle, errI := cmd.Flags().GetDuration("seal-idle")
		after, errA := cmd.Flags().GetDuration("seal-after")
		if errQ != nil || errI != nil || errA != nil {
			t.Fatal(errQ, errI, errA)
		}
		cfg := devConfig{port: 18080, data: t.TempDir(), sealQuiet: quiet, sealIdle: idle, sealAfter: after}.nodeConfig(1, "http://127.0.0.1:2379")
		if cfg.ID != "s2" || cfg.Listen != "127.0.0.1:18081" || cfg.SealQuiet != tc.quiet || cfg.SealIdle != tc.idle || cfg.SealAfter != tc.after {
			t.Errorf("%v: %s on %s, seal quiet %v, idle %v, after %v; want s2 on 127.0.0.1:18081, %v, %v, %v",
				tc.args, cfg.ID, cfg.Listen, cfg.SealQuiet, cfg.SealIdle, cfg.SealAfter, tc.quiet, tc.idle, tc.after)
		}
	}
}

// TestServerSealFlags: --seal-quiet, --seal-idle and --seal-after reach
// the node's configuration, 0 meaning never (-1: the node reads 0 as its
// default), and their defaults are the node's.
func TestServerSealFlags(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		quiet, idle, after time.Duration
	}{
		{nil, node.DefaultSealQuiet, node.DefaultSealIdle, node.DefaultSealAfter},
		{[]string{"--seal-quiet", "2s", "--seal-idle", "300ms", "--seal-after", "1h"}, 2 * time.Second, 300 * time.Millisecond, time.Hour},
		{[]string{"--seal-quiet", "0", "--seal-idle", "0", "--seal-after", "0"}, -1, -1, -1},
	} {
		var s serverFlags
		cmd := s.command()
		if err := cmd.ParseFlags(append([]string{"--id", "s1", "--data", t.TempDir()}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, err := s.config()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.SealQuiet != tc.quiet || cfg.SealIdle != tc.idle || cfg.SealAfter != tc.after {
			t.Errorf("%v: seal quiet %v, idle %v, after %v; want %v, %v, %v", tc.args, cfg.SealQuiet, cfg.SealIdle, cfg.SealAfter, tc.quiet, tc.idle, tc.after)
		}
	}
}

// TestCacheSizeFlags: --cache-size reaches the node's configuration in
// server (0: the node sizes it) and in dev (0: each server's share of
// node.AutoCacheSize's eighth of the memory).
func TestCacheSizeFlags(t *testing.T) {
	var s serverFlags
	cmd := s.command()
	if err := cmd.ParseFlags([]string{"--id", "s1", "--data", t.TempDir(), "--cache-size", "1GiB"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := s.config(); err != nil || cfg.CacheSize != 1<<30 {
		t.Fatalf("server --cache-size 1GiB: %d, %v", cfg.CacheSize, err)
	}
	var def serverFlags
	cmd = def.command()
	if err := cmd.ParseFlags([]string{"--id", "s1", "--data", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := def.config(); err != nil || cfg.CacheSize != 0 {
		t.Fatalf("server default: %d, %v; want 0 (the node's)", cfg.CacheSize, err)
	}
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{nil, node.AutoCacheSize(3)},
		{[]string{"--cache-size", "256MiB"}, 256 << 20},
	} {
		dev := newDevCmd()
		if err := dev.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		n, err := bytesize.Parse(dev.Flags().Lookup("cache-size").Value.String())
		if err != nil {
			t.Fatal(err)
		}
		cfg := devConfig{servers: 3, port: 18080, data: t.TempDir(), cacheSize: n}.nodeConfig(0, "http://127.0.0.1:2379")
		if cfg.CacheSize != tc.want {
			t.Errorf("dev %v: cache %d, want %d", tc.args, cfg.CacheSize, tc.want)
		}
	}
}

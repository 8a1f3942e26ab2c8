package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// logFlags are the logging flags shared by the commands that run servers.
type logFlags struct {
	level  string
	format string
}

func (f *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.format, "log-format", "text", "log format: text or json")
}

func (f *logFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch f.format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", f.format)
}

// clusterSecretUsage documents --cluster-secret-file on the commands that
// run servers.
const clusterSecretUsage = "file holding the cluster secret that servers send to each other and require on the internal API " +
	"(/internal/..., header X-TSDB-Cluster-Secret); the same file on every server of the cluster"

// randomSecret returns a new random cluster secret: 32 bytes from
// crypto/rand, hex-encoded.
func randomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a cluster secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// readSecretFile reads a token from a file, trimming surrounding space. An
// empty path means no token.
func readSecretFile(flag, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--%s: %s is empty", flag, path)
	}
	return tok, nil
}

func validPort(flag string, p int) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("--%s %d: want a port from 1 to 65535", flag, p)
	}
	return nil
}

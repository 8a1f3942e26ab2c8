package membership

import (
	"fmt"
	"net"
	"os"
)

// AdvertiseAddr is the address peers reach a server at, what its Info.Addr
// says: configured when set, else the listener's address ln, with a
// wildcard host (":8080", "0.0.0.0") replaced by the machine's hostname.
func AdvertiseAddr(configured string, ln net.Addr) (string, error) {
	if configured != "" {
		return configured, nil
	}
	host, port, err := net.SplitHostPort(ln.String())
	if err != nil {
		return "", fmt.Errorf("node: listener address %s: %w", ln, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("node: listening on all interfaces and no hostname to advertise (set Advertise): %w", err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

package membership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Directory is one server's view of the live servers: the membership list
// as the watch last delivered it (Set), with a direct etcd read for an id it
// does not know yet (a server that registered a moment ago). It resolves
// the addresses of internal calls and answers who is live; it is safe for
// concurrent use.
type Directory struct {
	cli    *clientv3.Client
	prefix string

	mu struct {
		sync.Mutex
		servers map[string]Info
	}
}

// NewDirectory returns an empty directory of the servers registered under
// prefix; Refresh or Set fills it.
func NewDirectory(cli *clientv3.Client, prefix string) *Directory {
	d := &Directory{cli: cli, prefix: prefix}
	d.mu.servers = make(map[string]Info)
	return d
}

// Set replaces the list (the membership watch's callback).
func (d *Directory) Set(infos []Info) {
	m := make(map[string]Info, len(infos))
	for _, i := range infos {
		m[i.ID] = i
	}
	d.mu.Lock()
	d.mu.servers = m
	d.mu.Unlock()
}

// Refresh reads the list from etcd now.
func (d *Directory) Refresh(ctx context.Context) ([]Info, error) {
	infos, _, err := List(ctx, d.cli, d.prefix)
	if err != nil {
		return nil, err
	}
	d.Set(infos)
	return infos, nil
}

// Addr resolves a live server's address for rpc.Client.Call: host:port, or
// https://host:port for a server serving TLS.
func (d *Directory) Addr(ctx context.Context, id string) (string, error) {
	d.mu.Lock()
	info, ok := d.mu.servers[id]
	d.mu.Unlock()
	if !ok {
		if _, err := d.Refresh(ctx); err != nil {
			return "", fmt.Errorf("resolve server %s: %w", id, err)
		}
		d.mu.Lock()
		info, ok = d.mu.servers[id]
		d.mu.Unlock()
	}
	if !ok || info.Addr == "" {
		return "", fmt.Errorf("%w: server %s is not live", errServerDown, id)
	}
	if info.TLS {
		return "https://" + info.Addr, nil // rpc.Client.Call's form of a TLS peer
	}
	return info.Addr, nil
}

// Known reports whether id is in the live list as last delivered (no etcd
// read).
func (d *Directory) Known(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.mu.servers[id]
	return ok
}

// Count returns how many servers are live (cheap: no copy).
func (d *Directory) Count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.servers)
}

// Live returns the live servers, sorted by id.
func (d *Directory) Live() []Info {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Info, 0, len(d.mu.servers))
	for _, i := range d.mu.servers {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// errServerDown: a server is not in the membership list. Its text predates
// the directory's move out of package node and is kept as it was.
var errServerDown = errors.New("node: server down")

package node_test

import (
	"github.com/tsdb/tsdb/internal/nodehttp"
	"github.com/tsdb/tsdb/node"
)

// The tests' servers serve HTTP as `tsdb server` does (node/http_test.go).
func init() { node.SetTestHTTP(nodehttp.New) }

// Package localcluster starts a throwaway tsdb cluster on loopback for the
// load test (DESIGN.md section 11: "the load test's local-cluster mode
// starts real `tsdb server` processes"): an embedded etcd in this process
// and N child processes of a tsdb executable, each its own runtime with
// its own data directory, log file and --write-limit, so a write limit,
// not one shared Go runtime, is what binds.
//
// Start picks free loopback ports, starts the servers with --min-servers
// N (so a table is created only once all are up) and the pre-split and
// extra flags of the Config, and returns once every server answers
// /healthz and GET /api/v1/cluster lists all N. Close stops them (SIGTERM,
// then SIGKILL after StopTimeout), closes etcd and removes the directory
// unless Keep.
//
// The children are started in their own process group, so a Ctrl-C at
// the terminal reaches only the load test, which then stops them itself
// after printing its summary.
//
// The executable is a Config field (Command plus Args before the server's
// flags), so tests can run a freshly built binary or the test binary.
package localcluster

package node

// testHTTP is the Config.HTTP of the tests' servers: internal/nodehttp.New,
// which imports this package and so cannot be imported by its internal
// tests; the external test package sets it (wire_test.go) before any test
// runs.
var testHTTP func(Handlers) (HTTPServer, error)

// SetTestHTTP sets testHTTP (called from wire_test.go's init).
func SetTestHTTP(f func(Handlers) (HTTPServer, error)) { testHTTP = f }

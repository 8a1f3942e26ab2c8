package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tsdb/tsdb/node"
)

// tlsFlags are tsdb server's TLS flags (its HTTP listener and its internal
// calls) and its etcd client's TLS and authentication flags.
type tlsFlags struct {
	certFile, keyFile, caFile  string
	etcdCert, etcdKey, etcdCA  string
	etcdUser, etcdPasswordFile string
}

func (f *tlsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.certFile, "tls-cert-file", "", "PEM certificate (chain) of the HTTP listener: with --tls-key-file, the public and internal API are served over HTTPS only, and peers call this server at https://")
	fs.StringVar(&f.keyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&f.caFile, "tls-ca-file", "", "PEM CA certificates that peers' certificates must chain to on internal calls to HTTPS servers (default: the system's roots)")
	fs.StringVar(&f.etcdCert, "etcd-cert-file", "", "PEM client certificate for etcd (with --etcd-key-file; for an etcd with --client-cert-auth)")
	fs.StringVar(&f.etcdKey, "etcd-key-file", "", "PEM private key of --etcd-cert-file")
	fs.StringVar(&f.etcdCA, "etcd-ca-file", "", "PEM CA certificates etcd's certificate must chain to (default: the system's roots); TLS is used with any --etcd-* file or an https --etcd URL")
	fs.StringVar(&f.etcdUser, "etcd-username", "", "etcd user, for an etcd with authentication enabled (with --etcd-password-file)")
	fs.StringVar(&f.etcdPasswordFile, "etcd-password-file", "", "file holding the password of --etcd-username (surrounding whitespace is trimmed)")
}

// apply checks the flags and sets them in cfg.
func (f *tlsFlags) apply(cfg *node.Config) error {
	if (f.certFile == "") != (f.keyFile == "") {
		return fmt.Errorf("--tls-cert-file and --tls-key-file go together")
	}
	if (f.etcdCert == "") != (f.etcdKey == "") {
		return fmt.Errorf("--etcd-cert-file and --etcd-key-file go together")
	}
	if (f.etcdUser == "") != (f.etcdPasswordFile == "") {
		return fmt.Errorf("--etcd-username and --etcd-password-file go together")
	}
	pw, err := readSecretFile("etcd-password-file", f.etcdPasswordFile)
	if err != nil {
		return err
	}
	cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSCAFile = f.certFile, f.keyFile, f.caFile
	cfg.EtcdCertFile, cfg.EtcdKeyFile, cfg.EtcdCAFile = f.etcdCert, f.etcdKey, f.etcdCA
	cfg.EtcdUsername, cfg.EtcdPassword = f.etcdUser, pw
	return nil
}

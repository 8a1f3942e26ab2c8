package etcdclient

import "testing"

func TestUsesTLS(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want bool
	}{
		{Config{Endpoints: []string{"http://127.0.0.1:2379"}}, false},
		{Config{Endpoints: []string{"http://a:2379", "https://b:2379"}}, true},
		{Config{Endpoints: []string{"http://a:2379"}, CAFile: "ca.pem"}, true},
		{Config{Endpoints: []string{"http://a:2379"}, CertFile: "c.pem", KeyFile: "k.pem"}, true},
	} {
		if got := c.cfg.UsesTLS(); got != c.want {
			t.Errorf("%+v: UsesTLS %v, want %v", c.cfg, got, c.want)
		}
	}
}

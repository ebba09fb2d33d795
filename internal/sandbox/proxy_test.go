package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// resolveAll answers every name with the loopback, where the test's servers are: whether a
// name may be reached is then the allowlist's and the private-address check's decision alone.
func resolveAll(context.Context, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestProxy: the egress proxy lets a tool reach the hosts of its allowlist, over plain HTTP
// and through CONNECT tunnels, and nothing else: a host not on the list, a port not allowed, an
// address given as a literal, and — unless tests allow it — any private or loopback address,
// whatever name leads there. Every refusal is recorded for the person and the model. All
// servers are on the loopback.
func TestProxy(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer upstream.Close()
	_, port, _ := net.SplitHostPort(upstream.Listener.Addr().String())

	p, err := NewProxy([]string{"allowed.test:" + port, "*.wild.test:" + port, "web.test"}, &ProxyOptions{Resolve: resolveAll, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	proxyURL, _ := url.Parse("http://" + p.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}, Timeout: 10 * time.Second}

	get := func(host string) (int, string) {
		t.Helper()
		resp, err := client.Get("http://" + host + "/")
		if err != nil {
			t.Fatalf("GET %s: %v", host, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"allowed.test:" + port, "a.wild.test:" + port, "b.a.wild.test:" + port} {
		if code, body := get(host); code != http.StatusOK || !strings.Contains(body, "hello from") {
			t.Errorf("GET %s through the proxy: %d %q, want 200 from the upstream", host, code, body)
		}
	}
	for _, host := range []string{
		"denied.test:" + port, // not on the list
		"wild.test:" + port,   // *.wild.test is the subdomains only
		"web.test:" + port,    // an entry without a port allows 80 and 443 only
		"127.0.0.1:" + port,   // an address literal is a host like any other
		"allowed.test.evil:" + port,
	} {
		if code, body := get(host); code != http.StatusForbidden || !strings.Contains(body, "toolsd sandbox proxy") {
			t.Errorf("GET %s: %d %q, want 403 from the proxy", host, code, body)
		}
	}

	// CONNECT: a tunnel to an allowed host carries the bytes both ways; others are refused.
	tunnel := func(host string) (int, string) {
		t.Helper()
		c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatalf("CONNECT %s: %v", host, err)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		r2, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("through the tunnel to %s: %v", host, err)
		}
		b, _ := io.ReadAll(r2.Body)
		return r2.StatusCode, string(b)
	}
	if code, body := tunnel("allowed.test:" + port); code != http.StatusOK || !strings.Contains(body, "hello from allowed.test") {
		t.Errorf("CONNECT allowed.test: %d %q", code, body)
	}
	if code, body := tunnel("denied.test:" + port); code != http.StatusForbidden || !strings.Contains(body, "not in the sandbox's network allowlist") {
		t.Errorf("CONNECT denied.test: %d %q", code, body)
	}

	blocked := strings.Join(p.Blocked(), "\n")
	for _, want := range []string{"denied.test:" + port, "wild.test:" + port, "web.test:" + port, "127.0.0.1:" + port} {
		if !strings.Contains(blocked, want) {
			t.Errorf("Blocked() = %q, want it to name %s", blocked, want)
		}
	}
}

// TestProxyRefusesPrivateAddresses: a name on the allowlist that resolves to a private or
// loopback address (DNS rebinding, an internal service) is refused: the proxy checks the
// address it is about to connect to, not the name.
func TestProxyRefusesPrivateAddresses(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal") }))
	defer upstream.Close()
	_, port, _ := net.SplitHostPort(upstream.Listener.Addr().String())
	p, err := NewProxy([]string{"*:" + port}, &ProxyOptions{Resolve: resolveAll})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	proxyURL, _ := url.Parse("http://" + p.Addr())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}, Timeout: 10 * time.Second}
	for _, host := range []string{"rebound.test:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		resp, err := client.Get("http://" + host + "/")
		if err != nil {
			t.Fatalf("GET %s: %v", host, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(b), "internal") {
			t.Errorf("GET %s: %d %q, want 403: a private address is never reached", host, resp.StatusCode, b)
		}
	}
	if b := strings.Join(p.Blocked(), "\n"); !strings.Contains(b, "private address") {
		t.Errorf("Blocked() = %q, want the private address named", b)
	}
	for _, a := range []string{"10.1.2.3", "192.168.0.1", "172.16.5.4", "169.254.169.254", "100.64.0.1", "::1", "fe80::1", "fc00::1", "0.0.0.0"} {
		if public(netip.MustParseAddr(a)) {
			t.Errorf("public(%s) = true", a)
		}
	}
	for _, a := range []string{"1.1.1.1", "2606:4700:4700::1111"} {
		if !public(netip.MustParseAddr(a)) {
			t.Errorf("public(%s) = false", a)
		}
	}
}

func TestParseAllow(t *testing.T) {
	for _, ok := range []string{"example.com", "*.example.com", "*", "example.com:8080", "EXAMPLE.com."} {
		if err := ParseAllow(ok); err != nil {
			t.Errorf("ParseAllow(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "http://example.com", "a b", "*.", "x..y", "example.com:0", "example.com:99999", "user@host", "ex*ample.com"} {
		if err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) accepted it", bad)
		}
	}
}

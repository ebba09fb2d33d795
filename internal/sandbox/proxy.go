package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proxy is the egress proxy of confined tools that may use the network: an HTTP proxy
// (CONNECT for HTTPS, absolute URLs for plain HTTP) on the loopback that lets through only
// hosts of its allowlist, on ports 80 and 443 unless an entry names another, and never to a
// private, loopback or link-local address: names are resolved by the proxy, every address
// checked, and the connection made to the address that was checked (no second lookup a DNS
// answer could change). Owned by whoever made it; safe for concurrent use.
type Proxy struct {
	allow []allowEntry
	opts  ProxyOptions
	ln    net.Listener
	srv   *http.Server
	done  chan struct{}

	mu      sync.Mutex // guards blocked, tunnels and closed
	blocked []string
	tunnels map[net.Conn]bool // both ends of every open tunnel
	closed  bool
	wg      sync.WaitGroup // the tunnels' goroutines
}

// ProxyOptions tune a Proxy. The zero value is what the daemon uses.
type ProxyOptions struct {
	// Resolve looks a host name up (nil: the system's resolver).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// AllowPrivate lets the proxy connect to private and loopback addresses (tests, whose
	// only servers are on the loopback).
	AllowPrivate bool
	Logger       *slog.Logger
}

type allowEntry struct {
	pattern string // "example.com", "*.example.com" or "*"
	port    int    // 0: 80 and 443
}

// ParseAllow checks an allowlist entry: a host name, "*.domain" for its subdomains, "*" for
// any host, each optionally with ":port".
func ParseAllow(s string) error {
	_, err := parseAllow(s)
	return err
}

func parseAllow(s string) (allowEntry, error) {
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return allowEntry{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
		host, port = h, n
	}
	if host == "*." {
		return allowEntry{}, fmt.Errorf("%q is not a host name: write example.com, *.example.com or *, optionally with :port", s)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	name := strings.TrimPrefix(host, "*.")
	if host == "*" {
		return allowEntry{"*", port}, nil
	}
	if name == "" || strings.ContainsAny(name, "*/ @?#") || strings.Contains(name, "..") {
		return allowEntry{}, fmt.Errorf("%q is not a host name: write example.com, *.example.com or *, optionally with :port", s)
	}
	return allowEntry{host, port}, nil
}

// NewProxy starts a proxy for the allowlist on 127.0.0.1 (an ephemeral port).
func NewProxy(allow []string, o *ProxyOptions) (*Proxy, error) {
	p := &Proxy{done: make(chan struct{}), tunnels: map[net.Conn]bool{}}
	if o != nil {
		p.opts = *o
	}
	if p.opts.Logger == nil {
		p.opts.Logger = slog.New(slog.DiscardHandler)
	}
	for _, a := range allow {
		e, err := parseAllow(a)
		if err != nil {
			return nil, fmt.Errorf("sandbox: network allowlist: %w", err)
		}
		p.allow = append(p.allow, e)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: proxy: %w", err)
	}
	p.ln = ln
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// Addr is the proxy's address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy and every connection through it, and waits for its goroutines.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	<-p.done
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// Blocked returns the hosts refused so far, each once, with why.
func (p *Proxy) Blocked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.blocked)
}

func (p *Proxy) block(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.blocked, what) && len(p.blocked) < 100 {
		p.blocked = append(p.blocked, what)
	}
}

// allowed reports whether host:port is on the allowlist.
func (p *Proxy) allowed(host string, port int) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, e := range p.allow {
		if e.port == 0 && port != 80 && port != 443 || e.port != 0 && e.port != port {
			continue
		}
		switch {
		case e.pattern == "*", e.pattern == host:
			return true
		case strings.HasPrefix(e.pattern, "*.") && strings.HasSuffix(host, e.pattern[1:]):
			return true
		}
	}
	return false
}

// dial connects to host:port if the allowlist and the addresses allow it.
func (p *Proxy) dial(ctx context.Context, hostport string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, err
	}
	if !p.allowed(host, port) {
		p.block(hostport + " (not in sandbox.network.allow)")
		return nil, fmt.Errorf("%s is not in the sandbox's network allowlist", hostport)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if p.opts.Resolve != nil {
		addrs, err = p.opts.Resolve(ctx, host)
		if err != nil {
			return nil, err
		}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	for _, a := range addrs {
		if !p.opts.AllowPrivate && !public(a) {
			p.block(fmt.Sprintf("%s (resolves to %s, a private address)", hostport, a))
			return nil, fmt.Errorf("%s resolves to %s, a private address, which the sandbox never lets a tool reach", host, a)
		}
	}
	var d net.Dialer
	var last error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

// public reports whether a is an address on the internet: not loopback, private, link-local,
// multicast, unspecified, or the shared and documentation ranges.
func public(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, pre := range []string{"100.64.0.0/10", "0.0.0.0/8", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16"} {
		if netip.MustParsePrefix(pre).Contains(a) {
			return false
		}
	}
	return true
}

// ServeHTTP handles CONNECT (tunnels) and plain HTTP requests in absolute form.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "toolsd sandbox proxy: send absolute http:// URLs, or CONNECT for https", http.StatusBadRequest)
		return
	}
	hostport := r.URL.Host
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		hostport = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	tr := &http.Transport{
		DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return p.dial(ctx, hostport) },
		DisableKeepAlives: true,
		Proxy:             nil,
	}
	defer tr.CloseIdleConnections()
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	resp, err := tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "toolsd sandbox proxy: "+err.Error(), http.StatusForbidden)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	up, err := p.dial(r.Context(), r.Host)
	if err != nil {
		http.Error(w, "toolsd sandbox proxy: "+err.Error(), http.StatusForbidden)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "toolsd sandbox proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = up.Close()
		_ = c.Close()
		return
	}
	p.tunnels[c], p.tunnels[up] = true, true
	p.wg.Add(1)
	p.mu.Unlock()
	_, _ = c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	// Bytes the client sent after its request are in rw's buffer.
	go func() {
		defer p.wg.Done()
		defer func() {
			p.mu.Lock()
			delete(p.tunnels, c)
			delete(p.tunnels, up)
			p.mu.Unlock()
		}()
		defer up.Close()
		defer c.Close()
		done := make(chan struct{})
		go func() {
			_, _ = io.Copy(up, rw)
			if tc, ok := up.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			close(done)
		}()
		_, _ = io.Copy(c, up)
		_ = c.Close()
		<-done
	}()
}

package recalld

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// splitScheme splits a gRPC target into the resolver scheme New understands
// ("dns", "passthrough", "ipv4", "ipv6", "unix", "unix-abstract"; "" for a
// plain host:port or any other scheme's target left whole) and the endpoint
// after "scheme:" and any "//authority/".
func splitScheme(target string) (scheme, endpoint string) {
	name, rest, ok := strings.Cut(target, ":")
	if !ok {
		return "", target
	}
	switch strings.ToLower(name) {
	case "dns", "passthrough", "ipv4", "ipv6", "unix", "unix-abstract":
	default:
		return "", target // host:port, [v6]:port, a bare IPv6 address, or an unknown scheme
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		if _, path, ok := strings.Cut(after, "/"); ok {
			rest = path // dns://8.8.8.8/host:port names the DNS server to ask
		}
	}
	return strings.ToLower(name), rest
}

// IsLoopbackTarget reports whether a gRPC target only reaches this machine, so
// that New may default to plaintext: a host "localhost" or a loopback IP
// (127.0.0.0/8, ::1, IPv4-mapped ::ffff:127.x.x.x), with or without brackets
// and port, plain or behind a dns:///, passthrough:///, ipv4: or ipv6: scheme
// (every address of a list, "h:p,h:p" or ipv4:/ipv6:, must be loopback), or a
// unix socket.
// Any other target, an unknown scheme included, is not.
func IsLoopbackTarget(target string) bool {
	scheme, endpoint := splitScheme(target)
	switch scheme {
	case "unix", "unix-abstract":
		return true
	case "ipv4", "ipv6":
		return allLoopback(endpoint)
	case "":
		if strings.Contains(endpoint, ",") {
			return allLoopback(endpoint) // host:port,host:port
		}
	}
	return IsLoopbackHost(hostOf(endpoint))
}

// allLoopback reports whether every address of a comma-separated list (empty
// entries aside; at least one) is loopback.
func allLoopback(list string) bool {
	some := false
	for _, addr := range strings.Split(list, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		if !IsLoopbackHost(hostOf(addr)) {
			return false
		}
		some = true
	}
	return some
}

// replicaList returns the replicas a target lists: "host:port,host:port" or
// the gRPC forms "ipv4:a:port,b:port" and "ipv6:[a]:port,[b]:port" (where the
// port may be left out: gRPC's 443). Each is trimmed, its host lowercased as
// the Python and Node clients do (the name is hashed), empty entries and
// repeats dropped. nil, nil for any other target.
func replicaList(target string) ([]string, error) {
	scheme, endpoint := splitScheme(target)
	if scheme != "ipv4" && scheme != "ipv6" && (scheme != "" || !strings.Contains(target, ",")) {
		return nil, nil
	}
	var names []string
	for _, addr := range strings.Split(endpoint, ",") {
		addr = strings.TrimSpace(addr)
		if addr == "" {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		switch {
		case scheme == "" && err != nil:
			return nil, fmt.Errorf("recalld: every address of a list must be host:port: %w", err)
		case scheme == "" && !isPort(port):
			return nil, fmt.Errorf("recalld: address %q: the port must be a number", addr)
		case scheme != "" && net.ParseIP(strings.Trim(hostOf(addr), "[]")) == nil:
			return nil, fmt.Errorf("recalld: %q in an %s: target is not an IP address", addr, scheme)
		case err == nil:
			addr = net.JoinHostPort(strings.ToLower(host), port)
		default:
			addr = strings.ToLower(addr) // an IP without port
		}
		if !slices.Contains(names, addr) {
			names = append(names, addr)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("recalld: no address in %q", target)
	}
	return names, nil
}

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535
}

// parseDNSTarget splits "dns:[//server/]host:port" (New has checked the
// host:port).
func parseDNSTarget(target string) *dnsTarget {
	rest := target[len("dns:"):]
	var server string
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		server, rest, _ = strings.Cut(after, "/")
	}
	host, port, _ := net.SplitHostPort(rest)
	return &dnsTarget{host: host, port: port, server: server}
}

// hostOf drops the port of "host:port" or "[v6]:port"; a bare IPv6 address
// (more than one colon, no brackets) is returned whole.
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// IsLoopbackHost reports whether host (no port; brackets allowed) is
// "localhost" or a loopback IP, IPv4-mapped IPv6 (::ffff:127.0.0.1) included.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package recalld

import (
	"net"
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
// (every address of an ipv4:/ipv6: list must be loopback), or a unix socket.
// Any other target, an unknown scheme included, is not.
func IsLoopbackTarget(target string) bool {
	scheme, endpoint := splitScheme(target)
	switch scheme {
	case "unix", "unix-abstract":
		return true
	case "ipv4", "ipv6":
		for _, addr := range strings.Split(endpoint, ",") {
			if !IsLoopbackHost(hostOf(addr)) {
				return false
			}
		}
		return endpoint != ""
	}
	return IsLoopbackHost(hostOf(endpoint))
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

/** What an address names: the base URL, whether TLS is used, and replicas to balance over. */

/** Transport security for a TLS connection (PEM strings or buffers). */
export interface TlsOptions {
  /** Trusted CA certificates; Node's default store when unset. */
  ca?: string | Buffer | undefined;
  /** Client certificate for mutual TLS. */
  cert?: string | Buffer | undefined;
  /** Client private key for mutual TLS. */
  key?: string | Buffer | undefined;
  /** Server name to verify, when it differs from the address's host. */
  serverName?: string | undefined;
}

/** Where a client connects: the base URL and whether TLS is used. */
export interface Target {
  baseUrl: string;
  secure: boolean;
  /** Set for `dns:///` addresses: calls go round robin over this name's addresses. */
  balancedHost?: string | undefined;
}

/** Whether `host` (without port; IPv6 with or without brackets) is a loopback host. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h)) return true;
  // IPv4-mapped IPv6: ::ffff:127.0.0.1, or the same in hex (::ffff:7f00:1).
  const mapped = /^(?:0{0,4}:){0,5}:?ffff:(.+)$/.exec(h)?.[1];
  return mapped !== undefined && (/^127(\.\d{1,3}){3}$/.test(mapped) || /^7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(mapped));
}

/**
 * Resolves `address` and the `tls` option into a base URL. Besides `host:port`
 * and `http(s)://` URLs it takes gRPC's target names: `dns:///host:port` (or
 * `dns:host:port`), balanced over the name's addresses, and
 * `ipv4:addr:port` / `ipv6:[addr]:port` for one address.
 */
export function resolveTarget(address: string, tls?: boolean | TlsOptions | undefined): Target {
  if (/^dns:\/\/[^/]/i.test(address)) {
    throw new TypeError(
      `recalld: dns://<dns server>/ is not supported, use dns:///host:port: ${JSON.stringify(address)}`,
    );
  }
  const balanced = /^dns:(?:\/\/\/)?(.*)$/i.exec(address);
  if (balanced) {
    if (/^[a-z]+:/i.test(balanced[1]!) && !/^[^:[\]]+:\d+$/.test(balanced[1]!)) {
      throw new TypeError(`recalld: dns:/// takes host:port, got ${JSON.stringify(address)}`);
    }
    const target = resolveTarget(balanced[1]!, tls);
    return { ...target, balancedHost: new URL(target.baseUrl).hostname.replace(/^\[|\]$/g, "") };
  }
  const single = /^ipv[46]:(.*)$/i.exec(address);
  if (single) {
    if (single[1]!.includes(",") || /^[a-z]+:\/\//i.test(single[1]!)) {
      throw new TypeError(`recalld: ipv4:/ipv6: take one addr:port, got ${JSON.stringify(address)}`);
    }
    return resolveTarget(single[1]!, tls);
  }
  const schemeMatch = /^(https?):\/\//i.exec(address);
  if (schemeMatch) {
    const secure = schemeMatch[1]!.toLowerCase() === "https";
    if (tls !== undefined && Boolean(tls) !== secure) {
      throw new TypeError(`recalld: address ${address} contradicts the tls option`);
    }
    return { baseUrl: address.replace(/\/+$/, ""), secure };
  }
  let url: URL | undefined;
  try {
    url = new URL(`http://${address}`);
  } catch {
    url = undefined;
  }
  if (url === undefined || url.port === "" || url.pathname !== "/" || url.username !== "") {
    throw new TypeError(`recalld: address must be host:port or a URL, got ${JSON.stringify(address)}`);
  }
  const secure = tls === undefined ? !isLoopbackHost(url.hostname) : Boolean(tls);
  return { baseUrl: `${secure ? "https" : "http"}://${url.host}`, secure };
}

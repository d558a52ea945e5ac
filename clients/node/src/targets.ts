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
  /** The server's URL; for a list of addresses, the first replica's. */
  baseUrl: string;
  secure: boolean;
  /** Set for `dns:///` addresses: calls are balanced over this name's addresses. */
  balancedHost?: string | undefined;
  /** Set for a list of several addresses: each replica as dialed (`host:port`, `[v6]:port`). */
  replicas?: string[] | undefined;
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
 * `ipv4:addr:port[,addr:port...]` / `ipv6:[addr]:port[,[addr]:port...]`; and a
 * plain list `host:port,host:port`. A list of several addresses sets
 * `replicas` (each trimmed, lowercased, once); with one it is that address alone.
 */
export function resolveTarget(address: string, tls?: boolean | TlsOptions | undefined): Target {
  if (/^dns:\/\/[^/]/i.test(address)) {
    throw new TypeError(
      `recalld: dns://<dns server>/ is not supported, use dns:///host:port: ${JSON.stringify(address)}`,
    );
  }
  const balanced = /^dns:(?:\/\/\/)?(.*)$/i.exec(address);
  if (balanced) {
    if ((/^[a-z]+:/i.test(balanced[1]!) && !/^[^:[\]]+:\d+$/.test(balanced[1]!)) || balanced[1]!.includes(",")) {
      throw new TypeError(`recalld: dns:/// takes one host:port, got ${JSON.stringify(address)}`);
    }
    const target = resolveTarget(balanced[1]!, tls);
    return { ...target, balancedHost: new URL(target.baseUrl).hostname.replace(/^\[|\]$/g, "") };
  }
  const grpcList = /^ipv[46]:(.*)$/i.exec(address);
  if (grpcList || address.includes(",")) {
    const list = grpcList ? grpcList[1]! : address;
    // Trimmed and lowercased (only the host has letters) as the Python and Go clients do, since the name is
    // hashed; empty entries and repeats dropped.
    const entries = list.split(",").map((entry) => entry.trim().toLowerCase());
    const replicas = [...new Set(entries.filter((entry) => entry !== ""))];
    if (replicas.length === 0) throw new TypeError(`recalld: no address in ${JSON.stringify(address)}`);
    const hosts = replicas.map((entry) => hostPort(entry, address).hostname);
    if (replicas.length === 1) return resolveTarget(replicas[0]!, tls);
    const secure = tls === undefined ? !hosts.every(isLoopbackHost) : Boolean(tls);
    return { baseUrl: `${secure ? "https" : "http"}://${replicas[0]!}`, secure, replicas };
  }
  const schemeMatch = /^(https?):\/\//i.exec(address);
  if (schemeMatch) {
    const secure = schemeMatch[1]!.toLowerCase() === "https";
    if (tls !== undefined && Boolean(tls) !== secure) {
      throw new TypeError(`recalld: address ${address} contradicts the tls option`);
    }
    return { baseUrl: address.replace(/\/+$/, ""), secure };
  }
  const url = hostPort(address, address);
  const secure = tls === undefined ? !isLoopbackHost(url.hostname) : Boolean(tls);
  return { baseUrl: `${secure ? "https" : "http"}://${url.host}`, secure };
}

/** `entry` (`host:port`, `[v6]:port`) as a URL; a TypeError naming `address` when it is anything else. */
function hostPort(entry: string, address: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(`http://${entry}`);
  } catch {
    url = undefined;
  }
  if (url === undefined || url.port === "" || url.pathname !== "/" || url.username !== "") {
    const what = entry === address ? "address must be host:port or a URL" : "each address of a list must be host:port";
    throw new TypeError(`recalld: ${what}, got ${JSON.stringify(address)}`);
  }
  return url;
}

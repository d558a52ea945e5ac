/**
 * The transport a RecalldClient's calls go through, from its target: one
 * connection for one address; for several replicas (a list, or a `dns:///`
 * name), one connection per replica and a balancer that picks one per call,
 * by user (UserAffinityTransport) or in turn (RoundRobinTransport).
 */

import type { Interceptor, Transport } from "@connectrpc/connect";
import { UserAffinityTransport } from "./affinity.js";
import { type AddressResolver, type Member, RoundRobinTransport, systemResolver } from "./balancing.js";
import type { Routing } from "./options.js";
import type { Target, TlsOptions } from "./targets.js";
import { connect } from "./transport.js";
import { definedFields } from "./values.js";

/** The transport of a client and how to close its connections. */
export interface ClientTransport {
  transport: Transport;
  close(): Promise<void>;
}

/** `host:port` for a resolved address, with brackets around an IPv6 one, as a replica is named. */
export function replicaAddress(ip: string, port: string): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/**
 * The transport for `target`. `resolveAddresses` resolves a `dns:///` name
 * (default: the system resolver); `routing` picks a replica when there are
 * several.
 */
export function clientTransport(
  target: Target,
  tls: TlsOptions,
  interceptors: Interceptor[],
  routing: Routing,
  resolveAddresses: AddressResolver | undefined,
): ClientTransport {
  const { secure, balancedHost, replicas } = target;
  const connectTo = (baseUrl: string, servername: string | undefined) =>
    connect(
      baseUrl,
      secure,
      secure ? definedFields({ ca: tls.ca, cert: tls.cert, key: tls.key, servername }) : {},
      interceptors,
    );
  let name: string;
  let resolve: AddressResolver;
  let servername = tls.serverName;
  if (balancedHost !== undefined) {
    const port = new URL(target.baseUrl).port;
    const lookup = resolveAddresses ?? systemResolver;
    name = balancedHost;
    resolve = async (host) => (await lookup(host)).map((ip) => replicaAddress(ip, port));
    // Certificates name the host, not each pod's address.
    servername ??= balancedHost;
  } else if (replicas !== undefined) {
    name = replicas.join(",");
    resolve = async () => replicas;
  } else {
    return connectTo(target.baseUrl, servername);
  }
  const scheme = secure ? "https" : "http";
  const member = (address: string): Member => ({ ...connectTo(`${scheme}://${address}`, servername), address });
  const balancer =
    routing === "round_robin"
      ? new RoundRobinTransport(name, member, resolve)
      : new UserAffinityTransport(name, member, resolve);
  return { transport: balancer, close: () => balancer.close() };
}

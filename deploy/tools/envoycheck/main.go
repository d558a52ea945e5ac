// Command envoycheck validates an Envoy static configuration offline, against the
// v3 API that go-control-plane compiles in, and holds it to what recalld's
// routing needs (docs/routing.md):
//
//   - the YAML decodes strictly (no duplicate key) into envoy.config.bootstrap.v3.Bootstrap,
//     every field known and of its type, every typed_config of a known type;
//   - the API's validation rules (protoc-gen-validate) hold for the bootstrap and for
//     every typed_config inside it, and no field or enum value set is deprecated
//     (Envoy warns about those, and refuses them a few releases later);
//   - every route sends its calls to one static cluster and hashes on the header
//     x-recalld-user; every such cluster balances with RING_HASH, speaks HTTP/2 to the
//     replicas (explicit http2_protocol_options), checks them with the gRPC health
//     protocol and has outlier detection; the listeners serving those routes speak
//     HTTP/2; the admin interface, if any, listens on loopback only.
//
// It prints a summary and exits 0, or names every problem and exits 1. It needs no
// Envoy binary and no network.
//
//	go tool envoycheck deploy/envoy/envoy.yaml
//	... | envoycheck -
//
// A typed_config of an extension not linked below fails with "unable to resolve":
// add the extension's package to the blank imports.
package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	// The extensions deploy/envoy/envoy.yaml and the Helm chart's rendering of it
	// use, so that their typed_config resolve (the gRPC health checker is part of
	// the core API, envoy.config.core.v3.HealthCheck).
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// UserHeader is the header recalld's clients send on every call: a hash of the user id.
const UserHeader = "x-recalld-user"

const httpProtocolOptions = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: envoycheck envoy.yaml   (or - for standard input)")
		os.Exit(2)
	}
	name := os.Args[1]
	var data []byte
	var err error
	if name == "-" {
		name = "standard input"
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "envoycheck:", err)
		os.Exit(1)
	}
	summary, err := check(data)
	if err != nil {
		fmt.Fprintf(os.Stderr, "envoycheck: %s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Printf("ok %s: %s\n", name, summary)
}

// check decodes and validates one configuration; the summary, or every problem found.
func check(data []byte) (string, error) {
	bootstrap, err := decode(data)
	if err != nil {
		return "", err
	}
	var problems []string
	if err := bootstrap.ValidateAll(); err != nil {
		problems = append(problems, "validation: "+err.Error())
	}
	problems = append(problems, walk(bootstrap.ProtoReflect(), "")...)
	summary, intent := checkIntent(bootstrap)
	problems = append(problems, intent...)
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "\n  "))
	}
	return summary, nil
}

// decode reads YAML strictly into a Bootstrap: a duplicate key, an unknown field, a
// value of the wrong type or an unresolvable typed_config is an error.
func decode(data []byte) (*bootstrapv3.Bootstrap, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errors.New("empty configuration")
	}
	asJSON, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	bootstrap := &bootstrapv3.Bootstrap{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(asJSON, bootstrap); err != nil {
		return nil, fmt.Errorf("not an envoy.config.bootstrap.v3.Bootstrap: %w", err)
	}
	return bootstrap, nil
}

// walk applies the validation rules inside every google.protobuf.Any below message
// (the generated ValidateAll checks an Any's type, not its content) and reports every
// deprecated field or enum value that is set.
func walk(message protoreflect.Message, path string) []string {
	var problems []string
	visit := func(child protoreflect.Message, at string) {
		if child.Descriptor().FullName() != "google.protobuf.Any" {
			problems = append(problems, walk(child, at)...)
			return
		}
		packed, ok := child.Interface().(*anypb.Any)
		if !ok {
			return
		}
		inner, err := packed.UnmarshalNew()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", at, err))
			return
		}
		if validator, ok := inner.(interface{ ValidateAll() error }); ok {
			if err := validator.ValidateAll(); err != nil {
				problems = append(problems, fmt.Sprintf("%s (%s): %v", at, packed.GetTypeUrl(), err))
			}
		}
		problems = append(problems, walk(inner.ProtoReflect(), at)...)
	}
	message.Range(func(field protoreflect.FieldDescriptor, value protoreflect.Value) bool {
		at := strings.TrimPrefix(path+"."+string(field.Name()), ".")
		if options, ok := field.Options().(*descriptorpb.FieldOptions); ok && options.GetDeprecated() {
			problems = append(problems, fmt.Sprintf("%s: deprecated field of %s", at, message.Descriptor().FullName()))
		}
		switch {
		case field.IsList() && field.Message() != nil:
			list := value.List()
			for i := 0; i < list.Len(); i++ {
				visit(list.Get(i).Message(), fmt.Sprintf("%s[%d]", at, i))
			}
		case field.IsMap() && field.MapValue().Message() != nil:
			value.Map().Range(func(key protoreflect.MapKey, entry protoreflect.Value) bool {
				visit(entry.Message(), fmt.Sprintf("%s[%s]", at, key.String()))
				return true
			})
		case field.IsList() || field.IsMap():
		case field.Message() != nil:
			visit(value.Message(), at)
		case field.Enum() != nil:
			number := value.Enum()
			if enumValue := field.Enum().Values().ByNumber(number); enumValue != nil {
				if options, ok := enumValue.Options().(*descriptorpb.EnumValueOptions); ok && options.GetDeprecated() {
					problems = append(problems, fmt.Sprintf("%s: deprecated value %s", at, enumValue.Name()))
				}
			}
		}
		return true
	})
	return problems
}

// checkIntent holds the configuration to recalld's routing: every route hashes on
// x-recalld-user into a ring-hash cluster that speaks HTTP/2 and checks its replicas.
func checkIntent(bootstrap *bootstrapv3.Bootstrap) (string, []string) {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if address := bootstrap.GetAdmin().GetAddress(); address != nil {
		host := address.GetSocketAddress().GetAddress()
		if !isLoopback(host) {
			fail("admin: listens on %q; the admin interface must stay on loopback (127.0.0.1)", host)
		}
	}

	clusters := map[string]*clusterv3.Cluster{}
	for _, cluster := range bootstrap.GetStaticResources().GetClusters() {
		clusters[cluster.GetName()] = cluster
	}

	routed := map[string]bool{}
	routes := 0
	for _, listener := range bootstrap.GetStaticResources().GetListeners() {
		for _, chain := range listener.GetFilterChains() {
			for _, filter := range chain.GetFilters() {
				manager := &hcmv3.HttpConnectionManager{}
				if filter.GetTypedConfig().MessageIs(manager) {
					if err := filter.GetTypedConfig().UnmarshalTo(manager); err != nil {
						fail("listener %q: %v", listener.GetName(), err)
						continue
					}
				} else {
					continue
				}
				at := fmt.Sprintf("listener %q", listener.GetName())
				switch manager.GetCodecType() {
				case hcmv3.HttpConnectionManager_HTTP2, hcmv3.HttpConnectionManager_AUTO:
				default:
					fail("%s: codec_type %s cannot carry gRPC; use HTTP2", at, manager.GetCodecType())
				}
				if manager.GetRouteConfig() == nil {
					fail("%s: routes must be given inline (route_config), not by RDS or scoped routes", at)
					continue
				}
				for _, host := range manager.GetRouteConfig().GetVirtualHosts() {
					for i, route := range host.GetRoutes() {
						routes++
						name := route.GetName()
						if name == "" {
							name = fmt.Sprintf("#%d", i)
						}
						where := fmt.Sprintf("%s, virtual host %q, route %s", at, host.GetName(), name)
						checkRoute(route, where, clusters, routed, fail)
					}
				}
			}
		}
	}
	if routes == 0 {
		fail("no HTTP route: expected a listener with an http_connection_manager routing to the replicas")
	}

	names := make([]string, 0, len(routed))
	for name := range routed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if cluster, ok := clusters[name]; ok {
			checkCluster(cluster, fail)
		}
	}
	summary := fmt.Sprintf("%d route(s) hash on %s into cluster(s) %s (RING_HASH, HTTP/2, gRPC health checks)",
		routes, UserHeader, strings.Join(names, ", "))
	return summary, problems
}

func checkRoute(route *routev3.Route, where string, clusters map[string]*clusterv3.Cluster,
	routed map[string]bool, fail func(string, ...any)) {
	action := route.GetRoute()
	if action == nil {
		fail("%s: does not route to the replicas (a redirect or a direct response)", where)
		return
	}
	cluster := action.GetCluster()
	if cluster == "" {
		fail("%s: must name one cluster (not weighted clusters or a cluster header), so every call of a user meets the same ring", where)
	} else if _, ok := clusters[cluster]; !ok {
		fail("%s: cluster %q is not among static_resources.clusters", where, cluster)
	} else {
		routed[cluster] = true
	}
	hashed := false
	for _, policy := range action.GetHashPolicy() {
		if strings.EqualFold(policy.GetHeader().GetHeaderName(), UserHeader) {
			hashed = true
		}
	}
	if !hashed {
		fail("%s: no hash_policy on header %s: calls would not follow their user", where, UserHeader)
	}
}

func checkCluster(cluster *clusterv3.Cluster, fail func(string, ...any)) {
	at := fmt.Sprintf("cluster %q", cluster.GetName())
	if cluster.GetLoadBalancingPolicy() != nil {
		fail("%s: load_balancing_policy overrides lb_policy; use lb_policy: RING_HASH", at)
	}
	if cluster.GetLbPolicy() != clusterv3.Cluster_RING_HASH {
		fail("%s: lb_policy is %s; the routes' hash on %s needs RING_HASH", at, cluster.GetLbPolicy(), UserHeader)
	}
	options := &upstreamhttpv3.HttpProtocolOptions{}
	packed, ok := cluster.GetTypedExtensionProtocolOptions()[httpProtocolOptions]
	switch {
	case !ok:
		fail("%s: no typed_extension_protocol_options[%s]: the replicas speak gRPC, HTTP/2 only", at, httpProtocolOptions)
	case packed.UnmarshalTo(options) != nil:
		fail("%s: typed_extension_protocol_options[%s] holds %s", at, httpProtocolOptions, packed.GetTypeUrl())
	case options.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil:
		fail("%s: the upstream protocol must be HTTP/2 (explicit_http_config.http2_protocol_options)", at)
	}
	grpcChecked := false
	for _, health := range cluster.GetHealthChecks() {
		if health.GetGrpcHealthCheck() != nil {
			grpcChecked = true
		}
	}
	if !grpcChecked {
		fail("%s: no health check with grpc_health_check (the replicas serve grpc.health.v1)", at)
	}
	if cluster.GetOutlierDetection() == nil {
		fail("%s: no outlier_detection: a dead replica's users would wait for the health check to move", at)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	address, err := netip.ParseAddr(host)
	return err == nil && address.IsLoopback()
}

package k8s

import (
	"context"
	"encoding/json"
	"fmt"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The part of the Kubernetes API the backend uses (pods, their exec, nodes
// and events, the server's version and access reviews) over client-go's
// REST client, with a scheme of only core/v1 and authorization/v1. The
// typed clientset's scheme registers every API group, which costs every
// process of the CLI about 8 MB of resident memory and milliseconds of
// start-up, k8s backend or not.
var (
	apiScheme  = runtime.NewScheme()
	apiCodecs  = serializer.NewCodecFactory(apiScheme)
	paramCodec = runtime.NewParameterCodec(apiScheme)
)

func init() {
	if err := corev1.AddToScheme(apiScheme); err != nil {
		panic(err)
	}
	if err := authv1.AddToScheme(apiScheme); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(apiScheme, schema.GroupVersion{Version: "v1"})
}

// api is a namespace's REST clients.
type api struct {
	core  *rest.RESTClient // /api/v1
	authz *rest.RESTClient // /apis/authorization.k8s.io/v1
	ns    string
}

func newAPI(rc *rest.Config, ns string) (*api, error) {
	client := func(path string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(rc)
		c.APIPath, c.GroupVersion = path, &gv
		c.NegotiatedSerializer = apiCodecs.WithoutConversion()
		return rest.RESTClientFor(c)
	}
	core, err := client("/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	authz, err := client("/apis", authv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &api{core: core, authz: authz, ns: ns}, nil
}

func (a *api) getPod(ctx context.Context, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	err := a.core.Get().Namespace(a.ns).Resource("pods").Name(name).Do(ctx).Into(&p)
	return &p, err
}

func (a *api) createPod(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	var out corev1.Pod
	err := a.core.Post().Namespace(a.ns).Resource("pods").Body(p).Do(ctx).Into(&out)
	return &out, err
}

func (a *api) listPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	var out corev1.PodList
	err := a.core.Get().Namespace(a.ns).Resource("pods").VersionedParams(&opts, paramCodec).Do(ctx).Into(&out)
	return &out, err
}

func (a *api) watchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return a.core.Get().Namespace(a.ns).Resource("pods").VersionedParams(&opts, paramCodec).Watch(ctx)
}

func (a *api) deletePod(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return a.core.Delete().Namespace(a.ns).Resource("pods").Name(name).Body(&opts).Do(ctx).Error()
}

func (a *api) listNodes(ctx context.Context) (*corev1.NodeList, error) {
	var out corev1.NodeList
	err := a.core.Get().Resource("nodes").Do(ctx).Into(&out)
	return &out, err
}

func (a *api) listEvents(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	var out corev1.EventList
	err := a.core.Get().Namespace(a.ns).Resource("events").VersionedParams(&opts, paramCodec).Do(ctx).Into(&out)
	return &out, err
}

// execRequest is the request of an exec in a pod's container.
func (a *api) execRequest(pod string, opts *corev1.PodExecOptions) *rest.Request {
	return a.core.Post().Resource("pods").Namespace(a.ns).Name(pod).SubResource("exec").VersionedParams(opts, paramCodec)
}

func (a *api) serverVersion(ctx context.Context) (*version.Info, error) {
	body, err := a.core.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var v version.Info
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("decode /version: %w", err)
	}
	return &v, nil
}

func (a *api) accessReview(ctx context.Context, r *authv1.SelfSubjectAccessReview) (*authv1.SelfSubjectAccessReview, error) {
	var out authv1.SelfSubjectAccessReview
	err := a.authz.Post().Resource("selfsubjectaccessreviews").Body(r).Do(ctx).Into(&out)
	return &out, err
}

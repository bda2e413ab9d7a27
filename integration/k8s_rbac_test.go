package integration

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/k8s"
)

// TestK8sRBACMinimal applies deploy/k8s/rbac.yaml in a fresh namespace,
// gets a token for its ServiceAccount (TokenRequest) and runs the backend
// with only that: an ephemeral pod, commands, files, List, and Missing
// reporting nothing missing.
func TestK8sRBACMinimal(t *testing.T) {
	admin := needCluster(t)
	adminSet := clientset(t, admin)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	manifest, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(file)), "deploy", "k8s", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ns := "pi-sandbox-rbac-" + runID
	if _, err := adminSet.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		adminSet.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	var sa string
	for _, doc := range strings.Split(string(manifest), "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("rbac.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			sa = o.Name
			_, err = adminSet.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = adminSet.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = adminSet.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("rbac.yaml: unexpected %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	exp := int64(900)
	tr, err := adminSet.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Only the token: no client certificate. "localhost" (in the API
	// server's certificate) keeps this client's user-namespace detection
	// apart from the admin's, so the try-and-recreate path runs once with
	// the minimal access (it cannot read nodes or events).
	u, _ := url.Parse(admin.REST.Host)
	rc := &rest.Config{
		Host:            "https://localhost:" + u.Port(),
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.REST.CAData, CAFile: admin.REST.CAFile},
	}
	cfg := k8sCfg(k8s.Config{Image: k8sBusybox, REST: rc, Namespace: ns}, "rbac")
	c, err := k8s.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := k8s.Missing(ctx, c)
	if err != nil || len(missing) > 0 {
		t.Fatalf("Missing = %v, %v; want none", missing, err)
	}
	if _, err := clientset(t, c).CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the ServiceAccount can list pods in namespace default")
	}
	start := time.Now()
	b, err := k8s.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod %s ready in %s, limits %q", b.Pod(), time.Since(start).Round(10*time.Millisecond), b.Info().Limits)
	wd := b.Info().WorkDir
	if err := b.WriteFile(ctx, wd+"/f.txt", []byte("rbac\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := b.Run(ctx, &ops.Cmd{Command: "cat f.txt; id -u", Dir: wd, Output: &out}); err != nil || out.String() != "rbac\n1000\n" {
		t.Errorf("Run = %v, output %q", err, out.String())
	}
	list, err := k8s.List(ctx, c)
	if err != nil || len(list) != 1 || list[0].Name != b.Pod() {
		t.Errorf("List = %v, %v; want the one pod", list, err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if list, err := k8s.List(ctx, c); err != nil || len(list) != 0 {
		t.Errorf("List after Close = %v, %v; want none", list, err)
	}

	// Pools with the pi-sandbox-pools Role: doctor's check, a fill, a
	// claim, down and drain.
	if msg, err := k8s.AgentSandbox(ctx, c); err != nil {
		t.Errorf("AgentSandbox = %q, %v", msg, err)
	}
	pcfg := k8s.Config{Image: k8sBusybox, REST: rc, Namespace: ns}
	if _, err := k8s.PoolFill(ctx, pcfg, "rbac", 1, 0, func(string) {}); err != nil {
		t.Fatalf("PoolFill: %v", err)
	}
	pod, err := k8s.Claim(ctx, k8s.Config{REST: rc, Namespace: ns}, "rbac", 0)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := k8s.Down(ctx, c, pod); err != nil {
		t.Errorf("Down of the claimed pod: %v", err)
	}
	if _, err := k8s.PoolDrain(ctx, c, "rbac"); err != nil {
		t.Errorf("PoolDrain: %v", err)
	}
}

// stripComments drops YAML comment lines.
func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

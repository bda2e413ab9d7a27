package open

import (
	"strings"
	"testing"
)

func TestK8sValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string // "" valid, else a part of the error
	}{
		{Config{Backend: "k8s", Docker: DockerConfig{Image: "img"}}, ""},
		{Config{Backend: "k8s", K8s: K8sConfig{Pod: "p", Container: "c"}}, ""},
		{Config{Backend: "k8s"}, "needs --image IMG, --pod NAME or --agent-sandbox NAME"},
		{Config{Backend: "k8s", K8s: K8sConfig{AgentSandbox: "s", Container: "c"}}, ""},
		{Config{Backend: "k8s", K8s: K8sConfig{AgentSandbox: "s", Pod: "p"}}, "mutually exclusive"},
		{Config{K8s: K8sConfig{AgentSandbox: "s"}}, "need --backend k8s"},
		{Config{Backend: "k8s", Docker: DockerConfig{Image: "img"}, K8s: K8sConfig{Pod: "p"}}, "mutually exclusive"},
		{Config{Backend: "k8s", Docker: DockerConfig{Container: "c"}}, "use --pod"},
		{Config{Backend: "k8s", K8s: K8sConfig{Pod: "p"}, Docker: DockerConfig{User: "1:1"}}, "--user needs --image"},
		{Config{Backend: "k8s", K8s: K8sConfig{Pod: "p"}, Docker: DockerConfig{Mounts: []string{"/a:/b"}}}, "--mount needs --image"},
		{Config{Backend: "k8s", Docker: DockerConfig{Image: "img"}, K8s: K8sConfig{Container: "c"}}, "--k8s-container needs --pod"},
		{Config{Backend: "docker", Docker: DockerConfig{Image: "img"}, K8s: K8sConfig{Namespace: "x"}}, "need --backend k8s"},
		{Config{K8s: K8sConfig{Pod: "p"}}, "need --backend k8s"},
	} {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.cfg, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one containing %q", tt.cfg, err, tt.want)
		}
	}
	k := (&Config{Backend: "k8s", Docker: DockerConfig{Image: "img", User: "1:2", Mounts: []string{"/a:/b:ro"}}}).k8s()
	if k.Image != "img" || k.User != "1:2" || len(k.Mounts) != 1 {
		t.Errorf("the shared flags did not reach K8s: %+v", k)
	}
}

// Command testsum runs `go test -json ...` and prints what plain `go test`
// prints (a line per package, the output of failing tests, build errors),
// then a summary backend by backend: how many tests passed, failed and were
// skipped on local, docker, ssh and k8s, and why they were skipped. A green run
// that did not test a backend says so.
//
//	go run ./internal/testsum -- go test -json -race ./...
//
// Its exit status is the command's (1 when a test failed although the
// command exited 0). A test belongs to the k8s, ssh or docker backend when its
// package path or name mentions it (TestK8s…, TestSSH…, integration/…/docker-debian);
// every other test counts as local.
package main

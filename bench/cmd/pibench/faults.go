package main

import "context"

func runFaults(ctx context.Context, o *options) error { return nil }

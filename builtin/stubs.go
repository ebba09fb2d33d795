package builtin

import "github.com/toolsd/toolsd/registry"

type httpRoundTripper = interface{}

func webfetchTool(o *Options) *registry.Tool   { return &registry.Tool{ID: "webfetch"} }
func todoWriteTool(o *Options) *registry.Tool  { return &registry.Tool{ID: "todowrite"} }
func todoReadTool(o *Options) *registry.Tool   { return &registry.Tool{ID: "todoread"} }

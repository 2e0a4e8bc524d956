package limits

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
)

// TestRefusalReadByConnectClients checks the refusal with real Connect, gRPC and gRPC-Web
// clients: each must read it as the resource_exhausted code with the limiter's message.
func TestRefusalReadByConnectClients(t *testing.T) {
	l := NewStreamLimiter(1, 0)
	l.slots <- struct{}{} // every slot taken
	srv := httptest.NewUnstartedServer(l.Wrap(http.NotFoundHandler()))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	const want = "the agent already serves 1 long-lived streams, its limit; close one, or retry after 1s"
	cases := map[string][]connect.ClientOption{
		"connect":  nil,
		"grpc":     {connect.WithGRPC()},
		"grpc-web": {connect.WithGRPCWeb()},
		"json":     {connect.WithProtoJSON()},
	}
	for name, opts := range cases {
		t.Run(name+" unary", func(t *testing.T) {
			c := connect.NewClient[emptypb.Empty, emptypb.Empty](srv.Client(), srv.URL+"/kubox.test.v1.Svc/Unary", opts...)
			_, err := c.CallUnary(context.Background(), connect.NewRequest(&emptypb.Empty{}))
			checkConnectError(t, err, want)
		})
		t.Run(name+" server stream", func(t *testing.T) {
			c := connect.NewClient[emptypb.Empty, emptypb.Empty](srv.Client(), srv.URL+"/kubox.test.v1.Svc/Stream", opts...)
			stream, err := c.CallServerStream(context.Background(), connect.NewRequest(&emptypb.Empty{}))
			if err != nil {
				checkConnectError(t, err, want)
				return
			}
			defer func() { _ = stream.Close() }()
			if stream.Receive() {
				t.Fatal("received a message from a refused stream")
			}
			checkConnectError(t, stream.Err(), want)
		})
	}
	srv.CloseClientConnections()
}

func checkConnectError(t *testing.T, err error, wantMsg string) {
	t.Helper()
	if got := connect.CodeOf(err); got != connect.CodeResourceExhausted {
		t.Fatalf("code %v (error %v), want resource_exhausted", got, err)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Message() != wantMsg {
		t.Errorf("message %q, want %q", ce.Message(), wantMsg)
	}
}

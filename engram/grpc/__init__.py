"""gRPC plumbing: the proto <-> domain conversion (wire), servers' and channels' plumbing with the error
translation (rpc), one client per service (clients), and the stubs' generator (protogen).

`import grpc` in these modules is the grpc library: imports are absolute, so this package never shadows it.
"""

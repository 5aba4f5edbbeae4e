// Tests never reach AWS: dummy credentials and a region keep the SDK from looking any further.
process.env.AWS_ACCESS_KEY_ID ??= 'test';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_EC2_METADATA_DISABLED = 'true';
// The SDK warns once per process that Node 20 support ends; the Lambdas run on Node 22, so it is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_TRACE_ENABLED ??= 'false';

// Metrics stay on and Powertools writes to stdout as in Lambda (no POWERTOOLS_DEV): the local Lambda runtime
// captures the reconcile handler's EMF there and the simulated CloudWatch turns it into the metrics alarms watch.

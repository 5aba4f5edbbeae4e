// Imported first by every soak entry point, before anything builds a logger: the soak prints its own figures.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_TRACE_ENABLED ??= 'false';
// Metrics stay on: the reconcile handler's EMF feeds the simulated CloudWatch, whose alarms the chaos run reads.

using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

namespace PaymentCallbacks.Server;

/// <summary>
/// OpenTelemetry for the sample, off unless asked for: <c>--OpenTelemetry:Exporter console</c> writes every span (the
/// request, and the callback's run on the executor) and BoundedWork's metrics to the console.
/// </summary>
internal static class CallbackTelemetry
{
    public const string ExporterSetting = "OpenTelemetry:Exporter";

    public static void AddCallbackTelemetry(this IServiceCollection services, IConfiguration configuration)
    {
        var exporter = configuration[ExporterSetting];
        if (string.IsNullOrEmpty(exporter) || string.Equals(exporter, "none", StringComparison.OrdinalIgnoreCase))
        {
            return;
        }

        if (!string.Equals(exporter, "console", StringComparison.OrdinalIgnoreCase))
        {
            throw new InvalidOperationException($"{ExporterSetting} must be 'console' or 'none' (was '{exporter}').");
        }

        services.AddOpenTelemetry()
            .WithTracing(tracing => tracing
                .AddAspNetCoreInstrumentation()
                .AddBoundedWorkInstrumentation()
                .AddSource(SideEffectCall.ActivitySourceName)
                .AddConsoleExporter())
            .WithMetrics(metrics => metrics
                .AddBoundedWorkInstrumentation()
                .AddConsoleExporter());
    }
}

using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.TestHost;

/// <summary>Where <see cref="OutboxDb"/> writes: one line per saved callback.</summary>
public sealed record OutboxFile(string Path);

/// <summary>Submits the callbacks once the host has started, then tells the test it is ready to be stopped.</summary>
internal sealed class CallbackSource(PaymentCallbacks callbacks, LegacyPayments legacy) : BackgroundService
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        await callbacks.OnCallbackAsync(new PaymentCallback(LegacyPayments.StuckOrderId, 10m), stoppingToken);
        for (var i = 1; i <= 5; i++)
        {
            await callbacks.OnCallbackAsync(new PaymentCallback($"order-{i}", i), stoppingToken);
        }

        await legacy.StuckCallStarted.WaitAsync(stoppingToken);
        await Console.Out.WriteLineAsync("READY");
        await Console.Out.FlushAsync(stoppingToken);
    }
}

using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Internal;

/// <summary>Starts and stops the in-memory schedules with the host.</summary>
internal sealed class RecurringScheduleHostedService(RecurringScheduleRegistry registry) : IHostedService
{
    public Task StartAsync(CancellationToken cancellationToken) => registry.StartAsync(cancellationToken);

    public Task StopAsync(CancellationToken cancellationToken) => registry.StopAsync(cancellationToken);
}

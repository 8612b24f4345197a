using Microsoft.Extensions.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>Starts and stops the durable schedulers with the host.</summary>
internal sealed class DurableSchedulesHostedService(DurableSchedules schedules) : IHostedService
{
    public Task StartAsync(CancellationToken cancellationToken) => schedules.StartAsync(cancellationToken);

    public Task StopAsync(CancellationToken cancellationToken) => schedules.StopAsync(cancellationToken);
}

using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The lease keeper: on its own thread, every third of the lease, renews the leases of the deliveries this node holds
/// (<see cref="LeaseBook"/>, by id and delivery token, with <see cref="HeartbeatStatement"/>), and hands the items among
/// them that someone asked to cancel to the queue (a notification its listener missed while it reconnected). See
/// docs/durable-invariants.md, I7.
/// </summary>
/// <remarks>
/// <b>State.</b> None of its own beyond its thread's retry delay: the leases are the book's. A failed renewal is tried
/// again within a second (the lease is longer than three missed beats), reported to the storage health once.
/// </remarks>
internal sealed class LeaseKeeper(
    NpgsqlDataSource dataSource,
    HeartbeatStatement statement,
    LeaseBook leases,
    HeartbeatParameters target,
    StorageHealth health,
    ILogger logger,
    Action<long> cancellationRequested)
{
    /// <summary>The loop's name in the storage health and the log.</summary>
    public const string Loop = "renewing leases";

    /// <summary>Renews the held leases every third of the lease until <paramref name="cancellationToken"/> is cancelled.</summary>
    public void Run(CancellationToken cancellationToken)
    {
        var interval = target.Lease / 3;
        var delay = interval;
        while (!cancellationToken.WaitHandle.WaitOne(delay))
        {
            try
            {
                if (!leases.IsEmpty)
                {
                    Renew();
                }

                if (health.Succeeded(Loop))
                {
                    logger.StorageRecovered(target.Queue, Loop);
                }

                delay = interval;
            }
            catch (Exception ex)
            {
                // Try again soon: the lease is shorter than three missed beats.
                delay = TimeSpan.FromTicks(Math.Min(interval.Ticks, TimeSpan.FromSeconds(1).Ticks));
                if (health.Failed(Loop, ex))
                {
                    logger.StorageUnavailable(target.Queue, Loop, delay, ex);
                }
            }
        }
    }

    /// <summary>
    /// Renews the leases of the deliveries this node holds (by id and delivery token: a row leased to this node that it
    /// does not hold, left by a claim or an outcome whose answer was lost, is left to expire and be reaped); the items
    /// among them that someone asked to cancel get their cancellation now.
    /// </summary>
    private void Renew()
    {
        var held = leases.Snapshot();
        List<long>? cancelled = null;
        using (var connection = dataSource.OpenConnection())
        using (var command = statement.Command(connection, target with { Ids = [.. held.Select(lease => lease.Key)], Deliveries = [.. held.Select(lease => lease.Value)] }))
        {
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                (cancelled ??= []).Add(HeartbeatStatement.ReadCancelled(reader));
            }
        }

        foreach (var id in cancelled ?? [])
        {
            cancellationRequested(id);
        }
    }
}

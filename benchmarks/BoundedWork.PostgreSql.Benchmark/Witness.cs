using System.Collections.Concurrent;
using System.Diagnostics;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The fair-share shape's independent witness (<c>consumer --witness</c>): each handler records its own start and end
/// (<see cref="Stopwatch"/> timestamps: CLOCK_MONOTONIC, one clock for every process of the machine), and the node
/// copies them every 100 ms into a table of the benchmark's own, <c>{schema}.fair_witness</c>, that the library never
/// reads or writes. The driver computes the waits and the running items of each tenant from that table alone, not from
/// the library's rows or counters.
/// </summary>
public sealed class Witness(string connectionString, string schema)
{
    /// <summary>The witness table's statement; the driver creates it before the consumers start.</summary>
    public static string CreateTable(string schema) =>
        $"CREATE TABLE IF NOT EXISTS {schema}.fair_witness (number integer NOT NULL, tenant text, pid integer NOT NULL, started bigint NOT NULL, ended bigint NOT NULL)";

    private readonly ConcurrentQueue<(int Number, string? Tenant, long Started, long Ended)> _pending = new();
    private readonly int _pid = Environment.ProcessId;

    /// <summary>Records one handler run (called by the handler itself, after its work).</summary>
    public void Record(BenchItem item, long started, long ended) => _pending.Enqueue((item.Number, item.Tenant, started, ended));

    /// <summary>Copies what was recorded every 100 ms until <paramref name="cancellationToken"/> is cancelled.</summary>
    public async Task RunAsync(CancellationToken cancellationToken)
    {
        using var timer = new PeriodicTimer(TimeSpan.FromMilliseconds(100));
        try
        {
            while (await timer.WaitForNextTickAsync(cancellationToken))
            {
                await FlushAsync(CancellationToken.None);
            }
        }
        catch (OperationCanceledException)
        {
        }
    }

    /// <summary>Copies every run recorded so far into the witness table (one binary COPY).</summary>
    public async Task FlushAsync(CancellationToken cancellationToken)
    {
        if (_pending.IsEmpty)
        {
            return;
        }

        await using var connection = new NpgsqlConnection(connectionString);
        await connection.OpenAsync(cancellationToken);
        await using var writer = await connection.BeginBinaryImportAsync(
            $"COPY {schema}.fair_witness (number, tenant, pid, started, ended) FROM STDIN (FORMAT BINARY)", cancellationToken);
        while (_pending.TryDequeue(out var run))
        {
            await writer.StartRowAsync(cancellationToken);
            await writer.WriteAsync(run.Number, NpgsqlDbType.Integer, cancellationToken);
            if (run.Tenant is null)
            {
                await writer.WriteNullAsync(cancellationToken);
            }
            else
            {
                await writer.WriteAsync(run.Tenant, NpgsqlDbType.Text, cancellationToken);
            }

            await writer.WriteAsync(_pid, NpgsqlDbType.Integer, cancellationToken);
            await writer.WriteAsync(run.Started, NpgsqlDbType.Bigint, cancellationToken);
            await writer.WriteAsync(run.Ended, NpgsqlDbType.Bigint, cancellationToken);
        }

        await writer.CompleteAsync(cancellationToken);
    }
}

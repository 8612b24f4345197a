using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements of an item's life besides the claims and the outcome write, each a type with its text, its parameters
/// by name (a record bound in the text's <c>$n</c> order) and the row it reads: <see cref="ReapStatement"/>,
/// <see cref="StatisticsStatement"/>, <see cref="CancelStatement"/> and the <see cref="DeadLetterStatements"/>. The texts are built by <see cref="StorageSql"/>
/// (its comments hold the reasoning).
/// </summary>
internal sealed class ItemStatements(StorageSql sql)
{
    private DeadLetterStatements? _deadLetters;

    /// <summary>Gets the reaper: expired leases back to ready (or to dead letter, or cancelled).</summary>
    public ReapStatement Reap { get; } = new(sql.ReapExpired);

    /// <summary>Gets the statistics read.</summary>
    public StatisticsStatement Statistics { get; } = new(sql.Statistics);

    /// <summary>Gets the per-tenant statistics read.</summary>
    public TenantStatisticsStatement TenantStatistics { get; } = new(sql.TenantStatistics);

    /// <summary>Gets the cancellation of one item.</summary>
    public CancelStatement Cancel { get; } = new(sql.Cancel);

    /// <summary>Gets the dead-letter statements (made on first use: most nodes never read their dead letters).</summary>
    public DeadLetterStatements DeadLetters => _deadLetters ??= new(sql);
}

/// <summary>The reaper's parameters (<see cref="StorageSql.ReapExpired"/>): <c>$1</c> queue, <c>$2</c> the deliveries an item gets.</summary>
internal readonly record struct ReapParameters(string Queue, int MaxDeliveries);

/// <summary>A reaped row: the item, the state it went to (ready, dead letter or cancelled), and what it carries for a dead letter.</summary>
internal readonly record struct ReapedRow(long Id, short State, string Payload, int Attempts, string? LastError);

/// <summary>The reaper (<see cref="StorageSql.ReapExpired"/>): rows <see cref="ReapedRow"/>, one per expired lease.</summary>
internal sealed class ReapStatement(string text)
{
    private const int Id = 0;
    private const int State = 1;
    private const int Payload = 2;
    private const int Attempts = 3;
    private const int LastError = 5;

    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, in ReapParameters parameters)
    {
        var command = new NpgsqlCommand(Text, connection);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.Queue });
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = parameters.MaxDeliveries });
        return command;
    }

    /// <summary>Reads a row.</summary>
    public static ReapedRow Read(NpgsqlDataReader reader) => new(
        reader.GetInt64(Id), reader.GetInt16(State), reader.GetString(Payload), reader.GetInt32(Attempts),
        reader.IsDBNull(LastError) ? null : reader.GetString(LastError));
}

/// <summary>The statistics read (<see cref="StorageSql.Statistics"/>): <c>$1</c> queue; one row of counts.</summary>
internal sealed class StatisticsStatement(string text)
{
    private const int Ready = 0;
    private const int Scheduled = 1;
    private const int Running = 2;
    private const int DeadLettered = 3;
    private const int Completed = 4;
    private const int OldestReadyAge = 5;
    private const int Cancelled = 6;

    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/> for <paramref name="queue"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, string queue) =>
        new(Text, connection) { Parameters = { new NpgsqlParameter<string> { TypedValue = queue } } };

    /// <summary>Reads the row, as statistics read at <paramref name="readAt"/>.</summary>
    public static WorkQueueStorageStatistics Read(NpgsqlDataReader reader, DateTimeOffset readAt) => new()
    {
        Ready = reader.GetInt64(Ready),
        Scheduled = reader.GetInt64(Scheduled),
        Running = reader.GetInt64(Running),
        DeadLettered = reader.GetInt64(DeadLettered),
        Completed = reader.GetInt64(Completed),
        OldestReadyAge = TimeSpan.FromSeconds(reader.GetDouble(OldestReadyAge)),
        Cancelled = reader.GetInt64(Cancelled),
        IsAvailable = true,
        ReadAt = readAt,
    };
}

/// <summary>
/// The per-tenant statistics read (<see cref="StorageSql.TenantStatistics"/>): <c>$1</c> queue, <c>$2</c> how many
/// tenants get a row of their own; rows of tenant (null: the others together), ready and running, busiest first.
/// </summary>
internal sealed class TenantStatisticsStatement(string text)
{
    private const int Tenant = 0;
    private const int Ready = 1;
    private const int Running = 2;

    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/> for <paramref name="queue"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, string queue, int seriesLimit) =>
        new(Text, connection)
        {
            Parameters = { new NpgsqlParameter<string> { TypedValue = queue }, new NpgsqlParameter<int> { TypedValue = seriesLimit } },
        };

    /// <summary>Reads one row.</summary>
    public static WorkQueueTenantStatistics Read(NpgsqlDataReader reader) => new()
    {
        Tenant = reader.IsDBNull(Tenant) ? TenantStatistics.OtherTenants : reader.GetString(Tenant),
        Ready = reader.GetInt64(Ready),
        Running = reader.GetInt64(Running),
    };
}

/// <summary>
/// The cancellation's parameters (<see cref="StorageSql.Cancel"/>): <c>$1</c> queue, <c>$2</c> item, <c>$3</c> the
/// error a cancelled unstarted item keeps, <c>$4</c> the wake-up channel, <c>$5</c> the cancellation channel.
/// </summary>
internal readonly record struct CancelParameters(string Queue, long Item, string Error, string NotifyChannel, string CancelChannel);

/// <summary>The cancellation of one item (<see cref="StorageSql.Cancel"/>): one row, the state the item was found in (null: no such item).</summary>
internal sealed class CancelStatement(string text)
{
    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, in CancelParameters parameters)
    {
        var command = new NpgsqlCommand(Text, connection);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.Queue });
        command.Parameters.Add(new NpgsqlParameter<long> { TypedValue = parameters.Item });
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.Error });
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.NotifyChannel });
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.CancelChannel });
        return command;
    }

    /// <summary>Reads the row: the state found, or null.</summary>
    public static short? ReadFound(NpgsqlDataReader reader) => reader.IsDBNull(0) ? null : reader.GetInt16(0);
}

using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements the claim path runs most often, each a type with its text, its parameters by name (a record bound in
/// the text's <c>$n</c> order: the text stays what the server tests and prepared plans know) and the rows it reads:
/// <see cref="PlainClaimStatement"/>, <see cref="KeyedClaimStatement"/>, <see cref="HandOffStatement"/> and
/// <see cref="HeartbeatStatement"/>. The texts are built by <see cref="StorageSql"/> and <see cref="KeyedClaimSql"/>
/// (their comments hold the reasoning; docs/durable-invariants.md the invariants they keep). Binding allocates what the
/// positional code did: one parameter object per parameter, none per item.
/// </summary>
internal sealed class ClaimStatements(StorageSql sql)
{
    private KeyedClaimSql? _keyedSql;
    private KeyedClaimStatement? _keyed;
    private HandOffStatement? _handOff;
    private FairClaimStatement? _fair;

    /// <summary>Gets the plain claim.</summary>
    public PlainClaimStatement Plain { get; } = new(sql.Claim);

    /// <summary>Gets the per-key claim (built on first use: only a queue with <c>max_running_per_key</c> above one runs it).</summary>
    public KeyedClaimStatement Keyed => _keyed ??= new(KeyedSql.ClaimPerKey);

    /// <summary>Gets the fair claim (built on first use: only a queue with fair share on runs it).</summary>
    public FairClaimStatement Fair => _fair ??= new(new FairClaimSql(sql));

    /// <summary>Gets the hand-off claim (built on first use).</summary>
    public HandOffStatement HandOff => _handOff ??= new(KeyedSql.HandOff);

    /// <summary>Gets the lease renewal.</summary>
    public HeartbeatStatement Heartbeat { get; } = new(sql.Heartbeat);

    private KeyedClaimSql KeyedSql => _keyedSql ??= new KeyedClaimSql(sql);
}

/// <summary>What every claim binds first: <c>$1</c> queue, <c>$2</c> how many, <c>$3</c> node (the lease owner), <c>$4</c> lease.</summary>
internal static class ClaimParameters
{
    /// <summary>Adds the four leading parameters in their <c>$n</c> order.</summary>
    public static void AddLeading(NpgsqlParameterCollection parameters, string queue, int count, string node, TimeSpan lease)
    {
        parameters.Add(new NpgsqlParameter<string> { TypedValue = queue });
        parameters.Add(new NpgsqlParameter<int> { TypedValue = count });
        parameters.Add(new NpgsqlParameter<string> { TypedValue = node });
        parameters.Add(new NpgsqlParameter<TimeSpan> { TypedValue = lease });
    }

    /// <summary>A text[] parameter.</summary>
    public static NpgsqlParameter<string[]> TextArray(string[] values) => new() { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = values };

    /// <summary>A bigint[] parameter.</summary>
    public static NpgsqlParameter<long[]> BigintArray(long[] values) => new() { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Bigint, TypedValue = values };
}

/// <summary>
/// The two row types of a claim (<see cref="ClaimReader"/>): whether a row is the summary, how a claimed row and the
/// summary are read, each by columns of its own.
/// </summary>
internal interface IClaimRows
{
    /// <summary>Gets a value indicating whether the row is the claim's summary (its <c>summary</c> column), not a claimed item.</summary>
    static abstract bool IsSummary(NpgsqlDataReader reader);

    /// <summary>Reads a claimed row.</summary>
    static abstract StoredItem ReadItem(IStoredItemOwner owner, NpgsqlDataReader reader);

    /// <summary>Reads the summary row.</summary>
    static abstract ClaimSummary ReadSummary(NpgsqlDataReader reader);
}

/// <summary>
/// Reads a claim's result, in one place: the rows it claimed and its one summary row (<see cref="ClaimSummary"/>), two
/// row types told apart by the <c>summary</c> column, each read by columns of its own. Kept in the statement, not split
/// into a second statement: the summary is computed in the claim's own snapshot (the promotions it made, the items it
/// left), in the same round trip.
/// </summary>
internal static class ClaimReader
{
    /// <summary>
    /// Reads every row of a claim: claimed rows are added to <paramref name="claimed"/> as they are read (a failure part
    /// way leaves those read so far there); returns the summary (default: none was read).
    /// </summary>
    public static ClaimSummary Read<TRows>(NpgsqlDataReader reader, IStoredItemOwner owner, List<StoredItem> claimed)
        where TRows : IClaimRows
    {
        var summary = default(ClaimSummary);
        while (reader.Read())
        {
            if (TRows.IsSummary(reader))
            {
                summary = TRows.ReadSummary(reader);
                continue;
            }

            claimed.Add(TRows.ReadItem(owner, reader));
        }

        return summary;
    }
}

/// <summary>The plain claim's parameters (<see cref="StorageSql.Claim"/>): <c>$1</c>..<c>$4</c>, then <c>$5</c> the settings version the node's permits were granted under and <c>$6</c> how many ready items to count as waiting (0: none).</summary>
internal readonly record struct PlainClaimParameters(string Queue, int Count, string Node, TimeSpan Lease, long Version, int CountWaiting);

/// <summary>The plain claim (<see cref="StorageSql.Claim"/>): rows <see cref="PlainClaimRow"/> and its summary.</summary>
internal sealed class PlainClaimStatement(string text)
{
    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, in PlainClaimParameters parameters)
    {
        var command = new NpgsqlCommand(Text, connection);
        AddParameters(command.Parameters, parameters);
        return command;
    }

    /// <summary>Adds the plain claim's parameters, <c>$1</c>..<c>$6</c>.</summary>
    public static void AddParameters(NpgsqlParameterCollection target, in PlainClaimParameters parameters)
    {
        ClaimParameters.AddLeading(target, parameters.Queue, parameters.Count, parameters.Node, parameters.Lease);
        target.Add(new NpgsqlParameter<long> { TypedValue = parameters.Version });
        target.Add(new NpgsqlParameter<int> { TypedValue = parameters.CountWaiting });
    }
}

/// <summary>
/// The plain claim that carries outcomes in its own statement (<see cref="StorageSql.ClaimCarrying"/>): one round trip
/// and one commit for both. Its parameters: the plain claim's <c>$1</c>..<c>$6</c> (the node, <c>$3</c>, is also the
/// outcomes' lease owner), then the outcomes' arrays from <c>$7</c>; rows <see cref="CarryingClaimRow"/>. A text is
/// made once per combination of outcome kinds and kept.
/// </summary>
internal sealed class CarryingClaimStatement(StorageSql sql, OutcomeStatement outcomes)
{
    private readonly string?[] _texts = new string?[1 << 6];

    /// <summary>Gets the text for the outcome kinds in <paramref name="kinds"/>.</summary>
    public string Text(int kinds) => Volatile.Read(ref _texts[kinds]) ?? (_texts[kinds] = Build(kinds));

    /// <summary>Creates the command on <paramref name="connection"/>: the claim's parameters, then the outcomes'.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, in PlainClaimParameters claim, in OutcomeParameters carried)
    {
        var command = new NpgsqlCommand(Text(carried.Kinds), connection);
        PlainClaimStatement.AddParameters(command.Parameters, claim);
        OutcomeStatement.AddParameters(command.Parameters, carried);
        return command;
    }

    private string Build(int kinds)
    {
        var (ctes, recorded) = outcomes.RidingParts(kinds, first: 7);
        return sql.ClaimCarrying(ctes, recorded);
    }
}

/// <summary>
/// The fair claim (<see cref="FairClaimSql"/>): its lock, then its claim, two statements in one explicit transaction (the
/// claim's snapshot is taken once the queue's fair claims' lock is held; the commit releases the lock), with the plain
/// claim's parameters; rows <see cref="FairClaimRow"/> and its summary. Not an <c>NpgsqlBatch</c>: Npgsql's synchronous
/// batches wait for a ThreadPool thread, and claims must go on while the pool is starved (StarvationTests).
/// </summary>
internal sealed class FairClaimStatement(FairClaimSql sql)
{
    /// <summary>Gets the claim's text.</summary>
    public string Text { get; } = sql.Claim;

    /// <summary>Gets the claim's text under a per-tenant start rate.</summary>
    public string RatedText { get; } = sql.RatedClaim;

    /// <summary>Gets the lock's text.</summary>
    public string LockText { get; } = sql.Lock;

    /// <summary>Runs the lock in <paramref name="transaction"/>: the queue's fair claims take turns; it is held until the transaction ends.</summary>
    public void Lock(NpgsqlConnection connection, NpgsqlTransaction transaction, string queue)
    {
        using var command = new NpgsqlCommand(LockText, connection, transaction);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = queue });
        command.ExecuteNonQuery();
    }

    /// <summary>
    /// Creates the claim in <paramref name="transaction"/>, after <see cref="Lock"/>: <see cref="RatedText"/> when the
    /// settings version claimed under sets a per-tenant start rate (<paramref name="rated"/>), else <see cref="Text"/> (a
    /// claim under another version claims nothing either way).
    /// </summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, NpgsqlTransaction transaction, in PlainClaimParameters parameters, bool rated = false)
    {
        var claim = new NpgsqlCommand(rated ? RatedText : Text, connection, transaction);
        ClaimParameters.AddLeading(claim.Parameters, parameters.Queue, parameters.Count, parameters.Node, parameters.Lease);
        claim.Parameters.Add(new NpgsqlParameter<long> { TypedValue = parameters.Version });
        claim.Parameters.Add(new NpgsqlParameter<int> { TypedValue = parameters.CountWaiting });
        return claim;
    }
}

/// <summary>The per-key claim's parameters (<see cref="KeyedClaimSql.ClaimPerKey"/>): <c>$1</c>..<c>$4</c>, then <c>$5</c> M (<c>max_running_per_key</c>) and <c>$6</c> the settings version M was read under.</summary>
internal readonly record struct KeyedClaimParameters(string Queue, int Count, string Node, TimeSpan Lease, int PerKey, long Version);

/// <summary>The per-key claim (<see cref="KeyedClaimSql.ClaimPerKey"/>): rows <see cref="KeyedClaimRow"/> and its summary.</summary>
internal sealed class KeyedClaimStatement(string text)
{
    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, in KeyedClaimParameters parameters)
    {
        var command = new NpgsqlCommand(Text, connection);
        ClaimParameters.AddLeading(command.Parameters, parameters.Queue, parameters.Count, parameters.Node, parameters.Lease);
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = parameters.PerKey });
        command.Parameters.Add(new NpgsqlParameter<long> { TypedValue = parameters.Version });
        return command;
    }
}

/// <summary>
/// The hand-off's parameters (<see cref="KeyedClaimSql.HandOff"/>): <c>$1</c>..<c>$4</c>, then <c>$5</c> the bound the
/// rule admits by (M, or M + 1 to prefetch), <c>$6</c> the keys, <c>$7</c> M, <c>$8</c> the keys it may prefetch for.
/// </summary>
internal readonly record struct HandOffParameters(string Queue, int Count, string Node, TimeSpan Lease, int Bound, string[] Keys, int PerKey, string[] PrefetchKeys);

/// <summary>The hand-off claim (<see cref="KeyedClaimSql.HandOff"/>), in an outcome's transaction: rows <see cref="HandOffRow"/>, no summary.</summary>
internal sealed class HandOffStatement(string text)
{
    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/> in <paramref name="transaction"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, NpgsqlTransaction transaction, in HandOffParameters parameters)
    {
        var command = new NpgsqlCommand(Text, connection, transaction);
        ClaimParameters.AddLeading(command.Parameters, parameters.Queue, parameters.Count, parameters.Node, parameters.Lease);
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = parameters.Bound });
        command.Parameters.Add(ClaimParameters.TextArray(parameters.Keys));
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = parameters.PerKey });
        command.Parameters.Add(ClaimParameters.TextArray(parameters.PrefetchKeys));
        return command;
    }
}

/// <summary>
/// The lease renewal's parameters (<see cref="StorageSql.Heartbeat"/>): <c>$1</c> queue, <c>$2</c> node, <c>$3</c> lease,
/// <c>$4</c> the ids of the deliveries the node holds and <c>$5</c> their delivery tokens, in the same order.
/// </summary>
internal readonly record struct HeartbeatParameters(string Queue, string Node, TimeSpan Lease, long[] Ids, long[] Deliveries);

/// <summary>The lease renewal (<see cref="StorageSql.Heartbeat"/>): rows of one column, the id of a renewed item whose cancellation was asked.</summary>
internal sealed class HeartbeatStatement(string text)
{
    /// <summary>Gets the text.</summary>
    public string Text { get; } = text;

    /// <summary>Creates the command on <paramref name="connection"/>.</summary>
    public NpgsqlCommand Command(NpgsqlConnection connection, in HeartbeatParameters parameters)
    {
        var command = new NpgsqlCommand(Text, connection);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.Queue });
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = parameters.Node });
        command.Parameters.Add(new NpgsqlParameter<TimeSpan> { TypedValue = parameters.Lease });
        command.Parameters.Add(ClaimParameters.BigintArray(parameters.Ids));
        command.Parameters.Add(ClaimParameters.BigintArray(parameters.Deliveries));
        return command;
    }

    /// <summary>Reads a row: the id of an item to cancel.</summary>
    public static long ReadCancelled(NpgsqlDataReader reader) => reader.GetInt64(0);
}

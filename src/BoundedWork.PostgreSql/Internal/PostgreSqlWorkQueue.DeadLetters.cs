using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The dead letters kept in the table (<see cref="IDeadLetterStore"/>), served by <see cref="DeadLetterStore"/>.</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    private DeadLetterStore? _deadLetters;

    private DeadLetterStore DeadLetters => _deadLetters ??= new DeadLetterStore(Name, _asyncSource, _statements.DeadLetters, _sql.NotifyChannel, _claimLoop.Wake);

    public Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default) => DeadLetters.ListDeadLettersAsync(query, cancellationToken);

    public Task<StoredDeadLetter?> GetDeadLetterAsync(long itemId, int maxPayloadLength, CancellationToken cancellationToken = default) => DeadLetters.GetDeadLetterAsync(itemId, maxPayloadLength, cancellationToken);

    public Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default) => DeadLetters.RequeueDeadLettersAsync(selection, cancellationToken);

    public Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default) => DeadLetters.PurgeDeadLettersAsync(selection, cancellationToken);
}

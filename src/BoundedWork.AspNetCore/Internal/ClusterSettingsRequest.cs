using System.Buffers;
using System.Globalization;
using System.Text.Json;
using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Reads the JSON body of a change to a durable queue's fleet-wide settings (<c>PATCH {prefix}/queues/{name}/cluster</c>)
/// as strictly as <see cref="SettingsRequest"/> reads an executor's: every problem is reported against the field it
/// concerns (or <c>body</c>), and a body with any problem changes nothing. JSON <c>null</c> clears a limit.
/// </summary>
internal static class ClusterSettingsRequest
{
    public const string WorkersPerNode = "workersPerNode";
    public const string MaxRunning = "maxRunning";
    public const string MaxRunningPerKey = "maxRunningPerKey";
    public const string StartsPerSecond = "startsPerSecond";
    public const string StartBurst = "startBurst";
    public const string FairShare = "fairShare";

    /// <summary>The largest body read, as for an executor's settings.</summary>
    public const int MaxBodyBytes = SettingsRequest.MaxBodyBytes;

    /// <summary>The largest cluster limit or rate the console sets; a larger one is an operator's slip, not a limit.</summary>
    public const int MaxLimit = 1_000_000;

    /// <summary>The fields a change takes, in the order the documents list them.</summary>
    public static readonly string[] Fields = [WorkersPerNode, MaxRunning, MaxRunningPerKey, StartsPerSecond, StartBurst, FairShare];

    /// <summary>
    /// Parses a body (any of <see cref="Fields"/>, at least one) into a change of the settings that sets exactly the
    /// fields the body names.
    /// </summary>
    public static (Func<WorkQueueClusterSettings, WorkQueueClusterSettings>? Change, FieldErrors Errors) Parse(ReadOnlySequence<byte> body)
    {
        var errors = new FieldErrors();
        if (body.IsEmpty)
        {
            errors[SettingsRequest.Body] = [$"The request body is missing: send a JSON object with any of {string.Join(", ", Fields)}, such as {{\"maxRunning\": 20}} (null clears a limit)."];
            return (null, errors);
        }

        var changes = new List<Func<WorkQueueClusterSettings, WorkQueueClusterSettings>>();
        if (JsonChangeReader.ReadFields(body, Fields, $"a cluster change takes {string.Join(", ", Fields)}", errors, ReadField) is not { } fieldCount)
        {
            return (null, errors);
        }

        void ReadField(ref Utf8JsonReader reader, string field)
        {
            switch (field)
            {
                case WorkersPerNode when reader.TokenType == JsonTokenType.Null:
                    changes.Add(static s => s with { WorkersPerNode = null });
                    break;
                case WorkersPerNode when ReadInt32(ref reader, field, 1, BoundedExecutorOptions.MaxWorkerLimit, errors) is { } value:
                    changes.Add(s => s with { WorkersPerNode = value });
                    break;
                case MaxRunning when reader.TokenType == JsonTokenType.Null:
                    changes.Add(static s => s with { MaxRunning = null });
                    break;
                case MaxRunning when ReadInt32(ref reader, field, 1, MaxLimit, errors) is { } value:
                    changes.Add(s => s with { MaxRunning = value });
                    break;
                case MaxRunningPerKey when reader.TokenType == JsonTokenType.Null:
                    errors[field] = ["maxRunningPerKey cannot be cleared: it is at least 1, and 1 (the default) runs a key's items one at a time, in enqueue order."];
                    break;
                case MaxRunningPerKey when ReadInt32(ref reader, field, 1, MaxLimit, errors) is { } value:
                    changes.Add(s => s with { MaxRunningPerKey = value });
                    break;
                case StartsPerSecond when reader.TokenType == JsonTokenType.Null:
                    changes.Add(static s => s with { StartsPerSecond = null });
                    break;
                case StartsPerSecond when ReadRate(ref reader, StartsPerSecond, errors) is { } value:
                    changes.Add(s => s with { StartsPerSecond = value });
                    break;
                case StartBurst when reader.TokenType == JsonTokenType.Null:
                    changes.Add(static s => s with { StartBurst = null });
                    break;
                case StartBurst when ReadInt32(ref reader, field, 1, MaxLimit, errors) is { } value:
                    changes.Add(s => s with { StartBurst = value });
                    break;
                case FairShare when FairShareRequest.Read(ref reader, errors) is { } change:
                    changes.Add(s => s with { FairShare = change(s.FairShare) });
                    break;
            }
        }

        if (errors.Count == 0 && fieldCount == 0)
        {
            errors[SettingsRequest.Body] = [$"Set at least one of {string.Join(", ", Fields)}."];
        }

        if (errors.Count > 0)
        {
            return (null, errors);
        }

        Func<WorkQueueClusterSettings, WorkQueueClusterSettings> apply = settings => changes.Aggregate(settings, static (s, change) => change(s));
        return (apply, errors);
    }

    /// <summary>
    /// The JSON field a storage's validation message is about: its <see cref="ArgumentException.ParamName"/>, or the
    /// setting the message starts with (<c>MaxRunning must be at least 1</c>); <c>body</c> when neither names one.
    /// </summary>
    public static string FieldOf(ArgumentException exception)
    {
        var message = WithoutStoragePrefix(exception.Message);
        if (FairShareRequest.FieldOf(message) is { } fairShareField)
        {
            return fairShareField;
        }

        foreach (var candidate in (ReadOnlySpan<string?>)[exception.ParamName, exception.Message.Split(' ', 2)[0], message.Split(' ', 2)[0]])
        {
            var field = Array.Find(Fields, f => string.Equals(f, candidate, StringComparison.OrdinalIgnoreCase));
            if (field is not null)
            {
                return field;
            }
        }

        return SettingsRequest.Body;
    }

    /// <summary>
    /// A storage's validation message without the queue it names first (the PostgreSQL storage writes
    /// <c>Invalid fleet-wide settings for work queue 'payments': WorkersPerNode must ...</c>): the console's answer
    /// names the queue already, and the setting then leads the message.
    /// </summary>
    public static string WithoutStoragePrefix(string message)
    {
        const string Prefix = "Invalid fleet-wide settings for work queue '";
        if (!message.StartsWith(Prefix, StringComparison.Ordinal))
        {
            return message;
        }

        var end = message.IndexOf("': ", Prefix.Length, StringComparison.Ordinal);
        return end < 0 ? message : message[(end + 3)..];
    }

    /// <summary>A limit as the change log writes it: the number, or <c>none</c>.</summary>
    public static string Format(int? value) => value?.ToString(CultureInfo.InvariantCulture) ?? "none";

    /// <summary>A rate as the change log writes it: the number, or <c>none</c>.</summary>
    public static string Format(double? value) => value?.ToString("0.###", CultureInfo.InvariantCulture) ?? "none";

    /// <summary>The fields whose values differ between two settings, in <see cref="Fields"/> order.</summary>
    public static IEnumerable<string> Changed(WorkQueueClusterSettings before, WorkQueueClusterSettings after)
    {
        if (before.WorkersPerNode != after.WorkersPerNode)
        {
            yield return WorkersPerNode;
        }

        if (before.MaxRunning != after.MaxRunning)
        {
            yield return MaxRunning;
        }

        if (before.MaxRunningPerKey != after.MaxRunningPerKey)
        {
            yield return MaxRunningPerKey;
        }

        if (before.StartsPerSecond != after.StartsPerSecond)
        {
            yield return StartsPerSecond;
        }

        if (before.StartBurst != after.StartBurst)
        {
            yield return StartBurst;
        }

        if (!Equals(before.FairShare, after.FairShare))
        {
            yield return FairShare;
        }
    }

    internal static int? ReadInt32(ref Utf8JsonReader reader, string field, int min, int max, FieldErrors errors)
    {
        if (reader.TokenType != JsonTokenType.Number)
        {
            errors[field] = [$"{field} must be a whole number or null, not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        var raw = SettingsRequest.Shorten(JsonChangeReader.RawText(ref reader));
        if (!reader.TryGetInt32(out var value))
        {
            errors[field] = [raw.AsSpan().IndexOfAny(".eE") >= 0 && !(reader.TryGetDouble(out var d) && (Math.Abs(d) > int.MaxValue || !double.IsFinite(d)))
                ? $"{field} must be a whole number (was {raw})."
                : $"{field} is out of range: {raw} is not between {min} and {max.ToString("N0", CultureInfo.InvariantCulture)}."];
            return null;
        }

        if (value < min || value > max)
        {
            // maxRunningPerKey has no "none": null does not clear it (1 is its default).
            var clears = field == MaxRunningPerKey ? "1, the default, runs a key's items one at a time, in enqueue order" : "null clears it";
            errors[field] = [$"{field} must be between {min} and {max.ToString("N0", CultureInfo.InvariantCulture)} (was {raw}); {clears}."];
            return null;
        }

        return value;
    }

    /// <summary>A rate of starts per second: a number above 0 and at most <see cref="MaxLimit"/>; the message names <paramref name="field"/>.</summary>
    internal static double? ReadRate(ref Utf8JsonReader reader, string field, FieldErrors errors)
    {
        if (reader.TokenType != JsonTokenType.Number)
        {
            errors[field] = [$"{field} must be a number of starts per second or null, not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        var raw = SettingsRequest.Shorten(JsonChangeReader.RawText(ref reader));
        if (!reader.TryGetDouble(out var value) || !double.IsFinite(value) || value <= 0 || value > MaxLimit)
        {
            errors[field] = [$"{field} must be more than 0 and at most {MaxLimit.ToString("N0", CultureInfo.InvariantCulture)} (was {raw}); null clears it."];
            return null;
        }

        return value;
    }
}

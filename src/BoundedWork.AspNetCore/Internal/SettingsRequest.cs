using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using System.Globalization;
using System.Text.Json;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Reads the JSON body of a settings change strictly: every problem is reported against the field it concerns
/// (or <c>body</c>), and a body with any problem changes nothing.
/// </summary>
internal static class SettingsRequest
{
    public const string Workers = "workers";
    public const string QueueCapacity = "queueCapacity";
    public const string RejectionPolicyField = "rejectionPolicy";
    public const string WaitTimeout = "waitTimeout";
    public const string SlowItemThreshold = "slowItemThreshold";
    public const string QueueWaitThreshold = "queueWaitThreshold";
    public const string Body = "body";

    /// <summary>The largest body read; settings changes are a few dozen bytes.</summary>
    public const int MaxBodyBytes = 16 * 1024;

    public const string InfiniteWaitTimeout = "infinite";

    private static readonly string[] s_patchFields = [Workers, QueueCapacity, RejectionPolicyField, WaitTimeout, SlowItemThreshold, QueueWaitThreshold];
    private static readonly string[] s_putFields = [Workers];

    /// <summary>Parses a PUT workers body (<c>{"workers": 8}</c>, the field required) or a PATCH body (any of the fields, at least one).</summary>
    public static (BoundedExecutorSettingsChange? Change, Dictionary<string, string[]> Errors) Parse(ReadOnlySequence<byte> body, bool workersOnly, int maxWorkerCount)
    {
        var errors = new Dictionary<string, string[]>(StringComparer.Ordinal);
        var allowed = workersOnly ? s_putFields : s_patchFields;
        if (body.IsEmpty)
        {
            errors[Body] = [workersOnly
                ? "The request body is missing: send a JSON object such as {\"workers\": 8}."
                : $"The request body is missing: send a JSON object with any of {string.Join(", ", allowed)}, such as {{\"workers\": 8}}."];
            return (null, errors);
        }

        int? workers = null, capacity = null;
        RejectionPolicy? policy = null;
        TimeSpan? timeout = null, slowItemThreshold = null, queueWaitThreshold = null;
        var seen = new HashSet<string>(StringComparer.Ordinal);
        try
        {
            var reader = new Utf8JsonReader(body, new JsonReaderOptions { CommentHandling = JsonCommentHandling.Disallow, MaxDepth = 8 });
            if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
            {
                errors[Body] = [$"The request body must be a JSON object, not {Describe(reader.TokenType)}."];
                return (null, errors);
            }

            while (reader.Read() && reader.TokenType != JsonTokenType.EndObject)
            {
                if (!TryGetText(ref reader, out var name))
                {
                    errors[Body] = ["A field name is not valid UTF-8 text."];
                    reader.Read();
                    reader.Skip();
                    continue;
                }

                reader.Read();
                var field = Array.Find(allowed, f => string.Equals(f, name, StringComparison.OrdinalIgnoreCase));
                if (field is null)
                {
                    errors[name] = [$"Unknown field '{name}'; the allowed fields are {string.Join(", ", allowed)}."];
                    reader.Skip();
                    continue;
                }

                if (!seen.Add(field))
                {
                    errors[field] = [$"{field} appears more than once."];
                    reader.Skip();
                    continue;
                }

                switch (field)
                {
                    case Workers:
                        workers = ReadInt32(ref reader, field, errors);
                        break;
                    case QueueCapacity:
                        capacity = ReadInt32(ref reader, field, errors);
                        break;
                    case RejectionPolicyField:
                        policy = ReadPolicy(ref reader, errors);
                        break;
                    case SlowItemThreshold:
                        slowItemThreshold = ReadTimeout(ref reader, field, errors);
                        break;
                    case QueueWaitThreshold:
                        queueWaitThreshold = ReadTimeout(ref reader, field, errors);
                        break;
                    default:
                        timeout = ReadTimeout(ref reader, field, errors);
                        break;
                }
            }

            // A second value after the object, or a truncated object, is malformed JSON too.
            if (reader.TokenType != JsonTokenType.EndObject || reader.Read())
            {
                errors[Body] = ["The request body must hold exactly one JSON object."];
            }
        }
        catch (JsonException exception)
        {
            errors.Clear();
            errors[Body] = [$"The request body is not valid JSON: {exception.Message}"];
            return (null, errors);
        }

        if (errors.Count == 0)
        {
            if (workersOnly && workers is null)
            {
                errors[Workers] = ["workers is required: send {\"workers\": 8}."];
            }
            else if (seen.Count == 0)
            {
                errors[Body] = [$"Set at least one of {string.Join(", ", allowed)}."];
            }
        }

        CheckRange(errors, Workers, workers, 1, maxWorkerCount, $"the executor's MaxWorkerCount ({maxWorkerCount})");
        CheckRange(errors, QueueCapacity, capacity, 1, int.MaxValue, null);
        if (errors.Count > 0)
        {
            return (null, errors);
        }

        var change = new BoundedExecutorSettingsChange
        {
            WorkerCount = workers,
            QueueCapacity = capacity,
            RejectionPolicy = policy,
            WaitTimeout = timeout,
            SlowItemThreshold = slowItemThreshold,
            QueueWaitThreshold = queueWaitThreshold,
        };

        // The core's own rules are the last word; report anything they refuse under the JSON field's name.
        foreach (var (setting, message) in change.GetValidationErrors(maxWorkerCount))
        {
            errors[ToField(setting)] = [message];
        }

        return errors.Count > 0 ? (null, errors) : (change, errors);
    }

    public static string ToField(string setting) => setting switch
    {
        nameof(BoundedExecutorSettingsChange.WorkerCount) => Workers,
        nameof(BoundedExecutorSettingsChange.QueueCapacity) => QueueCapacity,
        nameof(BoundedExecutorSettingsChange.RejectionPolicy) => RejectionPolicyField,
        nameof(BoundedExecutorSettingsChange.WaitTimeout) => WaitTimeout,
        nameof(BoundedExecutorSettingsChange.SlowItemThreshold) => SlowItemThreshold,
        nameof(BoundedExecutorSettingsChange.QueueWaitThreshold) => QueueWaitThreshold,
        _ => JsonNamingPolicy.CamelCase.ConvertName(setting),
    };

    public static string FormatTimeout(TimeSpan timeout) =>
        timeout == Timeout.InfiniteTimeSpan ? InfiniteWaitTimeout : timeout.ToString("c", CultureInfo.InvariantCulture);

    private static void CheckRange(Dictionary<string, string[]> errors, string field, int? value, int min, int max, string? maxName)
    {
        if (value is not { } v || errors.ContainsKey(field))
        {
            return;
        }

        if (v < min)
        {
            errors[field] = [$"{field} must be at least {min} (was {v})."];
        }
        else if (v > max)
        {
            errors[field] = [$"{field} must not exceed {maxName ?? max.ToString(CultureInfo.InvariantCulture)} (was {v})."];
        }
    }

    private static int? ReadInt32(ref Utf8JsonReader reader, string field, Dictionary<string, string[]> errors)
    {
        if (reader.TokenType != JsonTokenType.Number)
        {
            errors[field] = [$"{field} must be a whole number, not {Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        if (reader.TryGetInt32(out var value))
        {
            return value;
        }

        var raw = System.Text.Encoding.UTF8.GetString(reader.HasValueSequence ? reader.ValueSequence.ToArray() : reader.ValueSpan);
        errors[field] = [raw.AsSpan().IndexOfAny(".eE") >= 0 && !(reader.TryGetDouble(out var d) && Math.Abs(d) > int.MaxValue)
            ? $"{field} must be a whole number (was {raw})."
            : $"{field} is out of range: {raw} does not fit a 32-bit integer."];
        return null;
    }

    private static RejectionPolicy? ReadPolicy(ref Utf8JsonReader reader, Dictionary<string, string[]> errors)
    {
        var names = string.Join(", ", Enum.GetNames<RejectionPolicy>());
        if (reader.TokenType != JsonTokenType.String)
        {
            errors[RejectionPolicyField] = [$"rejectionPolicy must be a string, one of {names}; not {Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        if (!TryGetText(ref reader, out var text))
        {
            errors[RejectionPolicyField] = [NotText(RejectionPolicyField)];
            return null;
        }

        // Exactly one name, any case: Enum.TryParse would also take numbers, comma-separated flags and padding.
        foreach (var policy in Enum.GetValues<RejectionPolicy>())
        {
            if (string.Equals(text, policy.ToString(), StringComparison.OrdinalIgnoreCase))
            {
                return policy;
            }
        }

        errors[RejectionPolicyField] = [$"rejectionPolicy '{text}' is not one of {names}."];
        return null;
    }

    private static TimeSpan? ReadTimeout(ref Utf8JsonReader reader, string field, Dictionary<string, string[]> errors)
    {
        const string Expected = "a string such as \"00:00:05\" (hh:mm:ss) or \"infinite\"";
        if (reader.TokenType != JsonTokenType.String)
        {
            errors[field] = [$"{field} must be {Expected}, not {Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        if (!TryGetText(ref reader, out var text))
        {
            errors[field] = [NotText(field)];
            return null;
        }

        if (string.Equals(text, InfiniteWaitTimeout, StringComparison.OrdinalIgnoreCase))
        {
            return Timeout.InfiniteTimeSpan;
        }

        if (TimeSpan.TryParseExact(text, "c", CultureInfo.InvariantCulture, out var timeout))
        {
            if (timeout <= TimeSpan.Zero)
            {
                errors[field] = [field == WaitTimeout
                    ? $"waitTimeout must be positive (was {text}); use \"infinite\" for no limit."
                    : $"{field} must be positive (was {text}); use \"infinite\" to turn it off."];
                return null;
            }

            return timeout;
        }

        errors[field] = [$"{field} '{text}' is not {Expected}."];
        return null;
    }

    /// <summary>
    /// Reads the current string or property name, or says it is not text: the reader checks JSON's structure, not
    /// that a string's bytes are valid UTF-8 or that its escapes pair surrogates, which only decoding finds.
    /// </summary>
    private static bool TryGetText(ref Utf8JsonReader reader, [NotNullWhen(true)] out string? text)
    {
        try
        {
            text = reader.GetString()!;
            return true;
        }
        catch (InvalidOperationException)
        {
            text = null;
            return false;
        }
    }

    private static string NotText(string field) => $"{field} is not valid UTF-8 text.";

    private static string Describe(JsonTokenType token) => token switch
    {
        JsonTokenType.String => "a string",
        JsonTokenType.Number => "a number",
        JsonTokenType.True or JsonTokenType.False => "a boolean",
        JsonTokenType.Null => "null",
        JsonTokenType.StartArray => "an array",
        JsonTokenType.StartObject => "an object",
        _ => "nothing",
    };
}

using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Validates a registered executor's options with <see cref="BoundedExecutorOptions.GetValidationErrors"/>,
/// prefixing each message with the executor's name.
/// </summary>
internal sealed class BoundedExecutorOptionsValidator(IEnumerable<BoundedExecutorRegistration> registrations)
    : IValidateOptions<BoundedExecutorOptions>
{
    private readonly BoundedExecutorRegistration[] _registrations = [.. registrations];

    public ValidateOptionsResult Validate(string? name, BoundedExecutorOptions options)
    {
        if (BoundedExecutorRegistration.Find(_registrations, name) is null)
        {
            return ValidateOptionsResult.Skip;
        }

        var errors = options.GetValidationErrors();
        if (errors.Count == 0)
        {
            return ValidateOptionsResult.Success;
        }

        return ValidateOptionsResult.Fail(errors.Values.Select(error => $"Executor '{name}': {error}"));
    }
}
